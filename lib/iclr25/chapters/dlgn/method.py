"""The DLGN and DLGN-SF, the ReLU baseline and their training; the gates as hyperplanes
of the input space and their distance to the tree's; DLGN-DT, the oblique tree built
from DLGN gates (the paper's Algorithms 1-3); the experiments the notebook runs and the
scikit-learn baselines."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from iclr25.chapters.dlgn.data import (
    Tree,
    TreeData,
    check_setting,
    discontinuity_scope,
    load_table,
)
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


def fit_best(
    model: nn.Module,
    x: np.ndarray,
    y: np.ndarray,
    x_val: np.ndarray,
    y_val: np.ndarray,
    **recipe,
) -> nn.Module:
    """:func:`fit` (``recipe``: its keyword arguments), returning the model of the
    epoch (0 included) with the fewest errors on ``(x_val, y_val)``, the earliest of
    equals: the authors' best-validation selection."""
    best: dict = {}

    def keep(epoch: int, net: nn.Module) -> None:
        errors = int((predict(net, x_val) != np.asarray(y_val)).sum())
        if not best or errors < best["errors"]:
            best.update(errors=errors, state=copy.deepcopy(net.state_dict()))

    fit(model, x, y, on_epoch=keep, **recipe)
    model.load_state_dict(best["state"])
    return model.eval()


def accuracy(model: nn.Module, x: np.ndarray, y: np.ndarray) -> float:
    return float((predict(model, x) == np.asarray(y)).mean())


# ---------------------------------------------------------------------------
# Gates as hyperplanes of the input space
# ---------------------------------------------------------------------------


@torch.no_grad()
def hyperplanes(model: DLGN) -> tuple[np.ndarray, np.ndarray]:
    """Every gate as a hyperplane a.x + c of the input: A (L*width, dim), c (L*width,)
    (the paper's Algorithm 3, GateHyperplanes).

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


def plane_distances(a: np.ndarray, c: np.ndarray, tree: Tree) -> np.ndarray:
    """Between every gate and every tree node, ||(a, c)/||a|| - (w, b)||, with the
    sign of (a, c) that brings them closest (w has unit norm): (gates, nodes)."""
    norms = np.linalg.norm(a, axis=1, keepdims=True)
    gates = np.hstack([a, c[:, None]]) / np.maximum(norms, 1e-12)
    nodes = np.hstack([tree.normals, tree.biases[:, None]])
    cross = np.abs(gates @ nodes.T)  # the sign that brings them closest
    squared = (gates**2).sum(1)[:, None] + (nodes**2).sum(1)[None, :] - 2 * cross
    return np.sqrt(np.maximum(squared, 0))


def gate_distances(a: np.ndarray, c: np.ndarray, tree: Tree) -> np.ndarray:
    """Per tree node, the distance of the closest gate (:func:`plane_distances`)."""
    return plane_distances(a, c, tree).min(0)


# ---------------------------------------------------------------------------
# DLGN-DT: an oblique tree built from DLGN gates (the paper's Algorithms 1-3)
# ---------------------------------------------------------------------------


@dataclass
class ExtractedTree:
    """An oblique tree of ``depth`` levels in heap order: node k sends x to child
    2k + 2 when a_k.x + c_k > 0, else to 2k + 1, as :class:`Tree` does. ``how`` says
    where each split came from ("cluster": the largest gate cluster; "logistic": the
    fallback; "leaf": the node was pure or small, and every leaf below it holds its
    majority label)."""

    a: np.ndarray  # (2^depth - 1, dim)
    c: np.ndarray  # (2^depth - 1,)
    how: list[str]  # (2^depth - 1,)
    leaves: np.ndarray  # (2^depth,) labels

    def predict(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        node = np.zeros(len(x), dtype=np.int64)
        for _ in range(int(np.log2(len(self.leaves)))):
            side = np.einsum("nd,nd->n", x, self.a[node]) + self.c[node]
            node = 2 * node + 1 + (side > 0)
        return self.leaves[node - len(self.c)]


def truncated(tree: ExtractedTree, depth: int, x: np.ndarray, y: np.ndarray) -> ExtractedTree:
    """``tree`` cut at ``depth`` levels, each new leaf labelled by the majority of the
    points of ``(x, y)`` (its training points) that reach it: the tree that BuildTree
    builds with that depth cap, since no split depends on the cap below it. A new leaf
    that no point reaches lies under a leaf of BuildTree's, and keeps its label."""
    check_setting(depth=depth)
    full = int(np.log2(len(tree.leaves)))
    if depth > full:
        raise ParameterError(f"cannot cut a tree of depth {full} at depth {depth}")
    n_nodes, x = 2**depth - 1, np.asarray(x, dtype=float)
    node = np.zeros(len(x), dtype=np.int64)
    for _ in range(depth):
        node = 2 * node + 1 + (np.einsum("nd,nd->n", x, tree.a[node]) + tree.c[node] > 0)
    counts = np.bincount(node - n_nodes, minlength=2**depth)
    ones = np.bincount(node - n_nodes, weights=np.asarray(y, dtype=float), minlength=2**depth)
    below = 2 ** (full - depth)  # leaves of the full tree under each new leaf
    kept = tree.leaves[::below]
    leaves = np.where(counts > 0, 2 * ones > counts, kept).astype(np.int64)
    return ExtractedTree(tree.a[:n_nodes], tree.c[:n_nodes], tree.how[:n_nodes], leaves)


def depth_on_validation(
    tree: ExtractedTree, x: np.ndarray, y: np.ndarray, x_val: np.ndarray, y_val: np.ndarray
) -> ExtractedTree:
    """The paper's choice of the depth cap on a validation split: ``tree`` (built on
    ``(x, y)`` with the largest cap) cut at the depth whose tree is the most accurate
    on ``(x_val, y_val)``, the shallowest of equals."""
    full = int(np.log2(len(tree.leaves)))
    cuts = [truncated(tree, d, x, y) for d in range(1, full + 1)]
    scores = [float((t.predict(x_val) == np.asarray(y_val)).mean()) for t in cuts]
    return cuts[int(np.argmax(scores))]


Split = Callable[[np.ndarray, np.ndarray, int], tuple[np.ndarray, float, str]]
"""Algorithm 2's DiscontHyperplane: (points, labels, heap index) of a node -> the
split's (a, c) and where it came from."""


def largest_cluster_center(
    a: np.ndarray, c: np.ndarray, eps: float, min_samples: int
) -> tuple[np.ndarray, float] | None:
    """Algorithm 2's LargestClusterCenter: each gate as the hyperplane
    (a, c)/||a||, its sign fixed so that a_1 >= 0 (as the authors do), clustered
    by DBSCAN (radius ``eps``, ``min_samples`` gates to a core); the mean of the
    largest cluster, or None when DBSCAN finds no cluster."""
    from sklearn.cluster import DBSCAN

    planes = np.hstack([a, c[:, None]]) / np.maximum(
        np.linalg.norm(a, axis=1, keepdims=True), 1e-12
    )
    planes *= np.where(planes[:, :1] < 0, -1.0, 1.0)
    labels = DBSCAN(eps=eps, min_samples=min_samples).fit_predict(planes)
    if labels.max() < 0:
        return None
    centre = planes[labels == np.bincount(labels[labels >= 0]).argmax()].mean(0)
    return centre[:-1], float(centre[-1])


def logistic_hyperplane(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    """The authors' fallback where no gate cluster is found: the hyperplane of a
    logistic regression fitted to the node's points."""
    from sklearn.linear_model import LogisticRegression

    fitted = LogisticRegression().fit(x, y)
    return fitted.coef_[0], float(fitted.intercept_[0])


def cluster_or_fallback(
    a: np.ndarray, c: np.ndarray, x: np.ndarray, y: np.ndarray, eps: float, min_samples: int
) -> tuple[np.ndarray, float, str]:
    """A node's split: the centre of the gates' largest cluster
    (:func:`largest_cluster_center`), or :func:`logistic_hyperplane` on the node's
    points where no cluster forms (or there are no gates)."""
    found = largest_cluster_center(a, c, eps, min_samples) if len(c) else None
    if found is None:
        return (*logistic_hyperplane(x, y), "logistic")
    return (*found, "cluster")


def build_tree(
    x: np.ndarray, y: np.ndarray, split: Split, depth: int, min_points: int
) -> ExtractedTree:
    """Algorithm 1 (BuildTree): while a node's points are impure (both labels) and
    large (at least ``min_points``) and the tree is shallower than ``depth``
    (the authors' max_depth), split them on ``split``'s hyperplane
    (DiscontHyperplane) and recurse on both sides; otherwise, or when a side would
    be empty, the node is a leaf with the majority label."""
    check_setting(depth=depth)
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=np.int64)
    n_nodes = 2**depth - 1
    tree = ExtractedTree(
        np.zeros((n_nodes, x.shape[1])),
        np.zeros(n_nodes),
        ["leaf"] * n_nodes,
        np.zeros(2**depth, dtype=np.int64),
    )

    def grow(k: int, here: np.ndarray) -> None:
        label = int(2 * y[here].sum() > here.sum())
        if k >= n_nodes:
            tree.leaves[k - n_nodes] = label
            return
        if 0 < y[here].sum() < here.sum() and here.sum() >= min_points:
            a, c, how = split(x[here], y[here], k)
            side = here & (x @ a + c > 0)
            if 0 < side.sum() < here.sum():
                tree.a[k], tree.c[k], tree.how[k] = a, c, how
                grow(2 * k + 1, here & ~side)
                grow(2 * k + 2, side)
                return
        below = 2 ** (depth - int(np.log2(k + 1)))  # leaves under node k
        start = (k + 1) * below - 1 - n_nodes
        tree.leaves[start : start + below] = label

    grow(0, np.ones(len(y), dtype=bool))
    return tree


def dlgn_split(
    *,
    width: int,
    depth: int,
    beta: float,
    epochs: int,
    lr: float,
    seed: int,
    eps: float,
    eps_below: float,
    min_samples: int,
    held_out: float = 0.1,
) -> Split:
    """DLGN-DT's DiscontHyperplane (Algorithm 2): train a DLGN on the node's points
    (TrainDLGN: Adam, ten batches an epoch, seed + node index, keeping the epoch
    with the fewest errors on the last ``held_out`` of the node's points), take its
    gates as hyperplanes (GateHyperplanes, Algorithm 3: :func:`hyperplanes`), and
    split on the centre of their largest cluster (:func:`largest_cluster_center`,
    radius ``eps`` at the root and ``eps_below`` elsewhere), or on
    :func:`logistic_hyperplane` where there is no cluster."""

    def split(x: np.ndarray, y: np.ndarray, k: int) -> tuple[np.ndarray, float, str]:
        torch.manual_seed(seed + k)
        model = DLGN(x.shape[1], width, depth, beta)
        cut = len(y) - max(1, int(held_out * len(y)))
        model = fit_best(
            model,
            x[:cut],
            y[:cut],
            x[cut:],
            y[cut:],
            epochs=epochs,
            lr=lr,
            batch_size=-(-cut // 10),
            seed=seed + k,
        )
        radius = eps if k == 0 else eps_below
        return cluster_or_fallback(*hyperplanes(model), x, y, radius, min_samples)

    return split


def true_gate_split(tree: Tree, eps: float, min_samples: int, band: float = 0.05) -> Split:
    """DiscontHyperplane with the true gates: instead of a trained DLGN's, the
    gates are the tree's own hyperplanes, each repeated as often as the label jumps
    across it among the node's points (:func:`discontinuity_scope`), the paper's
    principle that label discontinuities attract gates in proportion to their
    scope; then the same largest cluster, or the same fallback."""

    def split(x: np.ndarray, y: np.ndarray, k: int) -> tuple[np.ndarray, float, str]:
        copies = discontinuity_scope(tree, x, band)
        a, c = np.repeat(tree.normals, copies, axis=0), np.repeat(tree.biases, copies)
        return cluster_or_fallback(a, c, x, y, eps, min_samples)

    return split


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
    and the scikit-learn baselines, CART chosen over the authors' grid on the
    validation split (:func:`tuned`) and refitted on training and validation."""
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
        if kind != "CART":
            found[kind] = float(model.fit(x, y).score(xt, yt))
    xv, yv = table.val.x.numpy(), table.val.y.numpy()
    cart, _ = tuned(
        "CART",
        np.vstack([x, xv]),
        np.concatenate([y, yv]),
        seed,
        val_fraction=len(yv) / (len(y) + len(yv)),
    )
    found["CART"] = float(cart.score(xt, yt))
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
