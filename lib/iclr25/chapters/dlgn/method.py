"""The DLGN and DLGN-SF, the ReLU baseline and their training; the gates as hyperplanes
of the input space and their distance to the tree's; the tree read off a trained DLGN
(our reading of the paper's Algorithms 1-3); the experiments the notebook runs and the
scikit-learn baselines."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from iclr25.chapters.dlgn.data import Tree, TreeData, check_setting, load_table
from iclr25.core import ParameterError

# ---------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------


class DLGN(nn.Module):
    """Deep linearly gated network; ``shared_input=True`` gives DLGN-SF.

    g^l = W_g^l g^(l-1) + b^l (DLGN-SF: W_g^l x + b^l), h^0 = 1,
    h^l = sigmoid(beta g^l) * (W_v^l h^(l-1)), out = w.h^L + b (K outputs if K > 2).
    """

    def __init__(
        self,
        dim: int,
        width: int,
        depth: int,
        beta: float = 4.0,
        n_classes: int = 2,
        shared_input: bool = False,
    ):
        super().__init__()
        check_setting(dim=dim, width=width, depth=depth, beta=beta)
        self.dim, self.width, self.beta, self.shared_input = dim, width, beta, shared_input
        self.gates = nn.ModuleList(
            nn.Linear(dim if (layer == 0 or shared_input) else width, width)
            for layer in range(depth)
        )
        self.values = nn.ModuleList(nn.Linear(width, width, bias=False) for _ in range(depth))
        self.out = nn.Linear(width, 1 if n_classes == 2 else n_classes)

    def gate_preactivations(self, x: torch.Tensor) -> list[torch.Tensor]:
        """g^1 .. g^L, each (n, width)."""
        check_input(x, self.dim)
        found, g = [], x
        for gate in self.gates:
            g = gate(x if self.shared_input else g)
            found.append(g)
        return found

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.ones(len(x), self.width, dtype=x.dtype, device=x.device)
        for g, value in zip(self.gate_preactivations(x), self.values):
            h = torch.sigmoid(self.beta * g) * value(h)
        out = self.out(h)
        return out.squeeze(-1) if out.shape[-1] == 1 else out


class ReluMLP(nn.Module):
    """A ReLU network of ``depth`` hidden layers of ``width`` (the paper's baseline)."""

    def __init__(self, dim: int, width: int, depth: int, n_classes: int = 2):
        super().__init__()
        check_setting(dim=dim, width=width, depth=depth)
        self.dim = dim
        layers: list[nn.Module] = []
        for layer in range(depth):
            layers += [nn.Linear(dim if layer == 0 else width, width), nn.ReLU()]
        layers.append(nn.Linear(width, 1 if n_classes == 2 else n_classes))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_input(x, self.dim)
        out = self.net(x)
        return out.squeeze(-1) if out.shape[-1] == 1 else out


def check_input(x: torch.Tensor, dim: int) -> None:
    """A one-line error for inputs whose width is not the model's."""
    if x.ndim != 2 or x.shape[1] != dim:
        raise ParameterError(
            f"input of shape {tuple(x.shape)} does not fit this model; accepted: (n, {dim})"
        )


def loss(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Logistic loss for one output, cross-entropy for K outputs."""
    if out.ndim == 1:
        return nn.functional.binary_cross_entropy_with_logits(out, y.float())
    return nn.functional.cross_entropy(out, y)


@torch.no_grad()
def predict(model: nn.Module, x: np.ndarray | torch.Tensor) -> np.ndarray:
    """Class predictions of ``model`` for the rows of ``x``."""
    out = model(torch.as_tensor(np.asarray(x), dtype=torch.float32))
    return (out > 0).long().numpy() if out.ndim == 1 else out.argmax(-1).numpy()


def fit(
    model: nn.Module,
    x: np.ndarray,
    y: np.ndarray,
    *,
    epochs: int,
    lr: float,
    batch_size: int,
    seed: int,
    on_epoch: Callable[[int, nn.Module], None] | None = None,
) -> nn.Module:
    """Adam on minibatches of (x, y), reshuffled each epoch; ``on_epoch(e, model)`` is
    called before training (e = 0) and after each epoch e = 1 .. epochs."""
    xt = torch.as_tensor(np.asarray(x), dtype=torch.float32)
    yt = torch.as_tensor(np.asarray(y), dtype=torch.long)
    generator = torch.Generator().manual_seed(seed)
    optimiser = torch.optim.Adam(model.parameters(), lr=lr)
    if on_epoch:
        on_epoch(0, model)
    for epoch in range(1, epochs + 1):
        model.train()
        for batch in torch.randperm(len(yt), generator=generator).split(batch_size):
            optimiser.zero_grad()
            loss(model(xt[batch]), yt[batch]).backward()
            optimiser.step()
        model.eval()
        if on_epoch:
            on_epoch(epoch, model)
    return model


def accuracy(model: nn.Module, x: np.ndarray, y: np.ndarray) -> float:
    return float((predict(model, x) == np.asarray(y)).mean())


# ---------------------------------------------------------------------------
# Gates as hyperplanes of the input space
# ---------------------------------------------------------------------------


@torch.no_grad()
def hyperplanes(model: DLGN) -> tuple[np.ndarray, np.ndarray]:
    """Every gate as a hyperplane a.x + c of the input: A (L*width, dim), c (L*width,).

    DLGN: A_1 = W^1, c_1 = b^1; A_l = W^l A_(l-1), c_l = W^l c_(l-1) + b^l (the biases
    kept). DLGN-SF: A_l = W^l, c_l = b^l. Row l*width + i is gate i of layer l + 1.
    """
    a_rows, c_rows = [], []
    a, c = torch.eye(model.dim, dtype=torch.float64), torch.zeros(model.dim, dtype=torch.float64)
    for gate in model.gates:
        w, b = gate.weight.double(), gate.bias.double()
        a, c = (w, b) if (model.shared_input or not a_rows) else (w @ a, w @ c + b)
        a_rows.append(a.numpy())
        c_rows.append(c.numpy())
    return np.concatenate(a_rows), np.concatenate(c_rows)


def gate_distances(a: np.ndarray, c: np.ndarray, tree: Tree) -> np.ndarray:
    """Per tree node, the distance of the closest gate:
    min over gates and signs of ||(a, c)/||a|| - (w, b)|| (w has unit norm)."""
    norms = np.linalg.norm(a, axis=1, keepdims=True)
    gates = np.hstack([a, c[:, None]]) / np.maximum(norms, 1e-12)
    nodes = np.hstack([tree.normals, tree.biases[:, None]])
    cross = np.abs(gates @ nodes.T)  # the sign that brings them closest
    squared = (gates**2).sum(1)[:, None] + (nodes**2).sum(1)[None, :] - 2 * cross
    return np.sqrt(np.maximum(squared, 0)).min(0)


# ---------------------------------------------------------------------------
# Extracting a decision tree from a trained DLGN
# ---------------------------------------------------------------------------


@dataclass
class ExtractedTree:
    """Splits chosen per node (heap order, the positive side to child 2k + 2 as in
    :class:`Tree`; -1 where no point reached) and leaf labels."""

    a: np.ndarray  # (2^depth - 1, dim) the chosen gates' normals
    c: np.ndarray  # (2^depth - 1,)
    gate: np.ndarray  # (2^depth - 1,) index of the chosen gate, -1 if none
    leaves: np.ndarray  # (2^depth,) labels

    def predict(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        node = np.zeros(len(x), dtype=np.int64)
        for _ in range(int(np.log2(len(self.leaves)))):
            side = np.einsum("nd,nd->n", x, self.a[node]) + self.c[node]
            node = 2 * node + 1 + (side > 0)
        return self.leaves[node - len(self.gate)]


@dataclass(frozen=True)
class Crossings:
    """The model's output across each gate: for every (gate, point within ``eps`` of
    it) pair, the two copies x + eps u and x - eps u (u = a/||a||) and
    |f(x + eps u) - f(x - eps u)|."""

    gate: np.ndarray  # (P,)
    up: np.ndarray  # (P, dim)
    down: np.ndarray  # (P, dim)
    change: np.ndarray  # (P,)


def crossings(
    f: Callable[[np.ndarray], np.ndarray], a: np.ndarray, c: np.ndarray, x: np.ndarray, eps: float
) -> Crossings:
    """Evaluate ``f`` once on both sides of every gate, at the points near it."""
    norms = np.maximum(np.linalg.norm(a, axis=1), 1e-12)
    point, gate = np.nonzero(np.abs((x @ a.T + c) / norms) < eps)
    step = eps * a[gate] / norms[gate, None]
    up, down = x[point] + step, x[point] - step
    change = np.abs(f(up) - f(down)) if len(gate) else np.zeros(0)
    return Crossings(gate, up, down, change)


def discontinuity_scores(
    cross: Crossings, n_gates: int, inside: Callable[[np.ndarray], np.ndarray]
) -> np.ndarray:
    """Per gate, the mean change of the model's output across it over the points near
    it whose two copies lie in the node's region (``inside``); 0 where there are none
    (our reading of the paper's Algorithm 2)."""
    keep = inside(cross.up) & inside(cross.down)
    total = np.bincount(cross.gate[keep], cross.change[keep], minlength=n_gates)
    count = np.bincount(cross.gate[keep], minlength=n_gates)
    return np.where(count > 0, total / np.maximum(count, 1), 0.0)


def _distinct(a: np.ndarray, c: np.ndarray, order: np.ndarray, k: int, tol: float = 0.1):
    """The first ``k`` gates of ``order`` at least ``tol`` apart as hyperplanes."""
    planes = np.hstack([a, c[:, None]]) / np.maximum(
        np.linalg.norm(a, axis=1, keepdims=True), 1e-12
    )
    chosen: list[int] = []
    for g in order:
        if all(
            min(np.linalg.norm(planes[g] - planes[h]), np.linalg.norm(planes[g] + planes[h])) > tol
            for h in chosen
        ):
            chosen.append(int(g))
            if len(chosen) == k:
                break
    return chosen


def extract_tree(
    f: Callable[[np.ndarray], np.ndarray],
    a: np.ndarray,
    c: np.ndarray,
    x: np.ndarray,
    depth: int,
    eps: float = 0.05,
    candidates: int = 1,
) -> ExtractedTree:
    """A tree of ``depth`` read off a model's gates (our reading of Algorithms 1-3).

    At a node, score every gate by :func:`discontinuity_scores` inside the node's
    region (Algorithm 2, "finding the discontinuous hyperplane"), split the node's
    points on the highest-scoring gate and recurse on both sides to ``depth``
    (Algorithm 1); each leaf takes the majority of the model's labels ``f > 0.5``.
    ``f`` maps points to the model's probability of class 1; the gates ``(a, c)`` come
    from :func:`hyperplanes` (Algorithm 3). ``candidates`` > 1 is our lookahead, not
    the paper's: keep that many best distinct gates and split on the one whose subtree
    (built the same way) agrees best with the model's labels on the points.
    """
    check_setting(depth=depth)
    x = np.asarray(x, dtype=float)
    labels = (f(x) > 0.5).astype(np.int64)
    cross = crossings(f, a, c, x, eps)

    def inside_of(constraints):
        def inside(points):
            ok = np.ones(len(points), dtype=bool)
            for g, side in constraints:
                ok &= ((points @ a[g] + c[g]) > 0) == side
            return ok

        return inside

    def best(constraints, here, r):
        """(agreement, subtree): a leaf label or (gate, negative side, positive side)."""
        if r == 0 or not here.any():
            ones = int(labels[here].sum())
            return max(ones, int(here.sum()) - ones), int(2 * ones > here.sum())
        scores = discontinuity_scores(cross, len(c), inside_of(constraints))
        order = np.argsort(-scores, kind="stable")
        pool = _distinct(a, c, order[scores[order] > 0], candidates) or [int(order[0])]
        found = None
        for g in pool:
            side = (x @ a[g] + c[g]) > 0
            neg = best([*constraints, (g, False)], here & ~side, r - 1)
            pos = best([*constraints, (g, True)], here & side, r - 1)
            if found is None or neg[0] + pos[0] > found[0]:
                found = (neg[0] + pos[0], (g, neg[1], pos[1]))
        return found

    _, root = best([], np.ones(len(x), dtype=bool), depth)
    n_nodes = 2**depth - 1
    out = ExtractedTree(
        np.zeros((n_nodes, x.shape[1])),
        np.ones(n_nodes),
        np.full(n_nodes, -1),
        np.zeros(2**depth, dtype=np.int64),
    )
    stack = [(0, root)]
    while stack:
        k, sub = stack.pop()
        if k >= n_nodes:
            out.leaves[k - n_nodes] = sub if isinstance(sub, int) else 0
        elif isinstance(sub, int):  # an empty region: a leaf label copied down
            stack += [(2 * k + 1, sub), (2 * k + 2, sub)]
        else:
            out.gate[k], out.a[k], out.c[k] = sub[0], a[sub[0]], c[sub[0]]
            stack += [(2 * k + 1, sub[1]), (2 * k + 2, sub[2])]
    return out


def true_gate_accuracy(data: TreeData) -> float:
    """Test accuracy of the tree read off ``data``'s own tree: its hyperplanes as the
    only gates, its labels as the model's output, the training points to read on
    (the extractor's control: 1.0 when the reading recovers the tree)."""
    x_train, _, x_test, y_test = data.split()
    tree = data.tree

    def f(x: np.ndarray) -> np.ndarray:
        return tree.predict(x).astype(float)

    found = extract_tree(f, tree.normals, tree.biases, x_train, tree.depth)
    return float((found.predict(x_test) == y_test).mean())


def probability(model: nn.Module) -> Callable[[np.ndarray], np.ndarray]:
    """x -> the model's probability of class 1, as NumPy."""

    @torch.no_grad()
    def f(x: np.ndarray) -> np.ndarray:
        return torch.sigmoid(model(torch.as_tensor(x, dtype=torch.float32))).numpy()

    return f


# ---------------------------------------------------------------------------
# Experiments: what the notebook runs (and caches)
# ---------------------------------------------------------------------------

KINDS = ("DLGN", "DLGN-SF", "ReLU MLP")


def make_model(kind: str, dim: int, width: int, depth: int, beta: float, n_classes: int = 2):
    """A fresh "DLGN", "DLGN-SF" or "ReLU MLP"."""
    if kind not in KINDS:
        raise ParameterError(f"unknown model {kind!r}; accepted: {', '.join(KINDS)}")
    if kind == "ReLU MLP":
        return ReluMLP(dim, width, depth, n_classes)
    return DLGN(dim, width, depth, beta, n_classes, shared_input=kind == "DLGN-SF")


def train_on_tree(
    data: TreeData,
    kind: str,
    *,
    width: int,
    depth: int,
    beta: float,
    epochs: int,
    lr: float,
    batch_size: int,
    seed: int,
    snapshots: Sequence[int] = (),
) -> dict:
    """Train ``kind`` on the training split of ``data``; return its test accuracy, its
    state, and for gated models the closest-gate distance of every tree node after
    each epoch ("distances", (epochs + 1, nodes); row 0 at initialisation) and the
    gates at the epochs in ``snapshots`` ("planes": epoch -> (A, c))."""
    x_train, y_train, x_test, y_test = data.split()
    torch.manual_seed(seed)
    model = make_model(kind, x_train.shape[1], width, depth, beta)
    distances, planes = [], {}

    def record(epoch: int, net: nn.Module) -> None:
        if isinstance(net, DLGN):
            a, c = hyperplanes(net)
            distances.append(torch.from_numpy(gate_distances(a, c, data.tree)))
            if epoch in snapshots:
                planes[epoch] = (torch.from_numpy(a), torch.from_numpy(c))

    fit(
        model,
        x_train,
        y_train,
        epochs=epochs,
        lr=lr,
        batch_size=batch_size,
        seed=seed,
        on_epoch=record,
    )
    found = {"accuracy": accuracy(model, x_test, y_test), "state": model.state_dict()}
    if distances:
        found.update(distances=torch.stack(distances), planes=planes)
    return found


def restore(kind: str, state: dict, dim: int, width: int, depth: int, beta: float):
    """A model of ``kind`` with the weights ``state``, ready to evaluate."""
    model = make_model(kind, dim, width, depth, beta)
    model.load_state_dict(state)
    return model.eval()


def tabular_run(
    name: str,
    seed: int,
    *,
    width: int,
    depth: int,
    beta: float,
    steps: int,
    lr: float,
    batch_size: int,
) -> dict[str, float]:
    """Test accuracy on table ``name`` (split ``seed``) of the DLGN, the ReLU MLP of the
    same width and depth (each trained for about ``steps`` Adam steps, whole epochs),
    and the scikit-learn baselines."""
    table = load_table(name, seed)
    x, y = table.train.x.numpy(), table.train.y.numpy()
    epochs = -(-steps // -(-len(y) // batch_size))
    xt, yt = table.test.x.numpy(), table.test.y.numpy()
    found = {}
    for kind in ("DLGN", "ReLU MLP"):
        torch.manual_seed(seed)
        model = make_model(kind, table.n_features, width, depth, beta, table.n_classes)
        fit(model, x, y, epochs=epochs, lr=lr, batch_size=batch_size, seed=seed)
        found[kind] = accuracy(model, xt, yt)
    for kind, model in baselines(seed).items():
        found[kind] = float(model.fit(x, y).score(xt, yt))
    return found


# ---------------------------------------------------------------------------
# Baselines (scikit-learn)
# ---------------------------------------------------------------------------


SVM_GRID = {"C": [0.1, 0.5, 1, 2, 5], "kernel": ["linear", "rbf", "sigmoid"]}
"""The authors' SVM grid (ML_Synthetic notebook; its ``degree`` values only act on a
polynomial kernel, which the grid does not hold)."""

CART_GRID = {
    "criterion": ["gini", "entropy"],
    "splitter": ["best", "random"],
    "max_depth": [3, 4, 5, 10],
    "min_samples_split": [2, 5, 10],
    "min_samples_leaf": [1, 2, 4],
    "max_features": ["sqrt", "log2"],
}
"""The authors' CART grid (ML_Synthetic notebook)."""


def baselines(seed: int, depth: int | None = None) -> dict:
    """The paper's non-neural baselines: CART, random forest, gradient boosting, and a
    static kernel (RBF SVM); ``depth`` adds CART of that depth."""
    from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
    from sklearn.svm import SVC
    from sklearn.tree import DecisionTreeClassifier

    found = {
        "CART": DecisionTreeClassifier(random_state=seed),
        "random forest": RandomForestClassifier(n_estimators=100, random_state=seed),
        "gradient boosting": HistGradientBoostingClassifier(random_state=seed),
        "RBF SVM": SVC(kernel="rbf"),
    }
    if depth is not None:
        found[f"CART depth {depth}"] = DecisionTreeClassifier(max_depth=depth, random_state=seed)
    return found


def tuned(name: str, x: np.ndarray, y: np.ndarray, seed: int, val_fraction: float = 0.2):
    """The SVM or CART ("SVM", "CART") chosen over the authors' grid by accuracy on the
    last ``val_fraction`` of the training points, refitted on all of them."""
    from sklearn.model_selection import ParameterGrid
    from sklearn.svm import SVC
    from sklearn.tree import DecisionTreeClassifier

    grids = {"SVM": (SVM_GRID, SVC), "CART": (CART_GRID, DecisionTreeClassifier)}
    if name not in grids:
        raise ParameterError(f"no grid for {name!r}; accepted: {', '.join(grids)}")
    grid, make = grids[name]
    fixed = {"random_state": seed} if name == "CART" else {}
    cut = int(round(len(y) * (1 - val_fraction)))
    best, chosen = -1.0, {}
    for setting in ParameterGrid(grid):
        score = make(**setting, **fixed).fit(x[:cut], y[:cut]).score(x[cut:], y[cut:])
        if score > best:
            best, chosen = score, setting
    return make(**chosen, **fixed).fit(x, y), chosen
