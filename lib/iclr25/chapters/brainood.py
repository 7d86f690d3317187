"""BrainOOD: OOD-generalisable, interpretable GNNs for brain networks.

Xu et al. (ICLR 2025). A brain network is one graph per subject: a node per region of
interest (ROI), node features X = the ROI's row of the Pearson correlation matrix of
the ROI time series, edges = the strongest 20% |correlations|. Multi-site data shift
between sites (scanners, protocols, populations), so a GNN trained on some sites
fails on others. BrainOOD (official model ``GDGMTvGIN``, algorithm ``BrainOOD``) adds
to a 2-layer vGIN:

* a feature selector shared by all subjects, M = sigmoid(E E^T) (E learned, R x R,
  dropout 0.2 on M), X <- X * M, with the entropy of softmax(M) rows as a loss;
* a reconstruction head: a second (high-pass) GIN maps the node embeddings to
  H (R x R per graph) and MSE(tanh(H H^T) * M, X * M) is a loss;
* a structure extractor: an edge MLP on [h_i, h_j] (InstanceNorm per graph) gives edge
  logits l_ij; training uses att = sigmoid(l + log u - log(1 - u)), u ~ U(0, 1),
  symmetrised; ``rounds`` passes each draw b ~ Bernoulli(att), mask message passing with
  the straight-through b (binary forward, identity backward) and the class logits are
  averaged over the rounds;
* alignment: mean over entries of the across-batch standard deviation of the dense
  edge-logit matrices (the same structure selected in every subject);
* GIB: KL(Bern(att) || Bern(r)) with r = 0.9 - 0.1 floor(epoch / 20), floored at 0.7.

Loss = BCE + w_gib GIB + 0.1 align + 0.5 recon + 0.01 entropy (the shipped ABIDE
config, whose GIB weight is 0.0). Baselines on the same backbone: ERM, IRM, VREx and
GroupDRO (site = environment, the GOOD penalties and their shipped ABIDE weights) and
GSAT (extractor + GIB with weight 1, r floored at 0.5, one soft-masked pass).

The data are generated (ABIDE and ADNI cannot be downloaded here): ROI time series from
a latent network model of ``n_communities`` communities; the disorder adds a shared
factor to a planted set of ROIs (the ground truth); each site adds a global signal, its
own noise level, ROI scaling and a spurious sub-network, and training sites tie label
prevalence to site (a shortcut) that the held-out sites break.

Written by hand, and why: the official code is a research repository (GOOD framework,
torch_sparse, DGL loaders) that does not install beside this torch; the GIN layers,
pooling, InstanceNorm, loaders, dense adjacency and edge masks are torch_geometric's.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import nn

from iclr25 import core
from iclr25.core import Bound, ClaimSpec, Param

if TYPE_CHECKING:
    import plotly.graph_objects as go

# ---------------------------------------------------------------------------------
# Generated multi-site connectomes
# ---------------------------------------------------------------------------------


@dataclass
class Population:
    """What every site shares: ROI communities, loadings and the planted ROIs."""

    community: np.ndarray  # [R] community of each ROI
    loading: np.ndarray  # [R] loading of each ROI on its community factor
    planted: np.ndarray  # [R] bool, the disorder's ROIs (ground truth)


@dataclass
class Site:
    """One acquisition site; every effect scales with the shift strength."""

    global_signal: float  # loading of a factor shared by all ROIs
    noise: float  # standard deviation of the ROI noise
    scale: np.ndarray  # [R] ROI scaling of the neural signal
    spurious: np.ndarray  # [R] loading of the site's own sub-network factor


@dataclass
class Cohort:
    """Subjects' correlation matrices with labels and sites."""

    corr: np.ndarray  # [n, R, R]
    y: np.ndarray  # [n] 0 control, 1 disorder
    site: np.ndarray  # [n] site index
    planted: np.ndarray  # [R] bool


def population(n_rois: int, n_communities: int = 7, n_planted: int = 8, seed: int = 0):
    """ROIs in contiguous communities, loadings U(0.5, 0.9), ``n_planted`` random ROIs."""
    rng = np.random.default_rng([seed, 1])
    community = np.arange(n_rois) * n_communities // n_rois
    planted = np.zeros(n_rois, bool)
    planted[rng.choice(n_rois, n_planted, replace=False)] = True
    return Population(community, rng.uniform(0.5, 0.9, n_rois), planted)


def sample_site(pop: Population, shift: float, rng: np.random.Generator) -> Site:
    """A site whose effects all vanish at ``shift`` = 0 (every site then alike).

    Global-signal loading shift * U(0.2, 0.6); noise sd exp(shift * U(-0.4, 0.4)); ROI
    scale exp(0.3 shift z); a spurious factor on R/5 random ROIs, loading shift * U(0.5, 0.8).
    """
    n_rois = len(pop.loading)
    spurious = np.zeros(n_rois)
    rois = rng.choice(n_rois, max(2, n_rois // 5), replace=False)
    spurious[rois] = shift * rng.uniform(0.5, 0.8, len(rois))
    return Site(
        global_signal=shift * rng.uniform(0.2, 0.6),
        noise=float(np.exp(shift * rng.uniform(-0.4, 0.4))),
        scale=np.exp(0.3 * shift * rng.standard_normal(n_rois)),
        spurious=spurious,
    )


def sample_subjects(
    pop: Population,
    site: Site,
    y: np.ndarray,
    effect: float,
    rng: np.random.Generator,
    n_timepoints: int = 100,
) -> np.ndarray:
    """Correlation matrices [n, R, R] of ROI time series of the latent network model.

    x_r(t) = s_r (a_r (1 + 0.15 z) f_c(r)(t) + b [r planted] g(t) + p_r h(t))
             + gamma u(t) + sigma e_r(t),
    with community factors f, a disorder factor g on the planted ROIs of strength
    b = effect * max(0, y + 0.6 z) (patients and controls overlap), the site's spurious
    factor h (loadings p), global signal u (gamma) and noise e (sigma).
    """
    n, n_rois = len(y), len(pop.loading)
    n_comm = int(pop.community.max()) + 1
    corr = np.empty((n, n_rois, n_rois), np.float32)
    for i in range(n):
        f = rng.standard_normal((n_timepoints, n_comm))
        g, h, u = rng.standard_normal((3, n_timepoints, 1))
        a = pop.loading * (1 + 0.15 * rng.standard_normal(n_rois))
        b = effect * max(0.0, y[i] + 0.6 * rng.standard_normal())
        neural = a * f[:, pop.community] + b * pop.planted * g + site.spurious * h
        x = site.scale * neural + site.global_signal * u
        x = x + site.noise * rng.standard_normal((n_timepoints, n_rois))
        corr[i] = np.corrcoef(x, rowvar=False)
    return corr


def generate(
    n_subjects: int,
    n_rois: int,
    *,
    n_sites: int = 6,
    shift: float = 1.0,
    shortcut: float = 0.6,
    effect: float = 0.8,
    n_planted: int | None = None,
    seed: int = 0,
) -> Cohort:
    """A multi-site cohort: the last two sites are held out (OOD validation, OOD test).

    Training site k has disorder prevalence 0.5 + shortcut / 2 (k even) or 0.5 -
    shortcut / 2 (k odd), so the site predicts the label there; held-out sites have 0.5.
    """
    pop = population(n_rois, n_planted=n_planted or max(4, n_rois // 6), seed=seed)
    rng = np.random.default_rng([seed, 2])
    sizes = np.full(n_sites, n_subjects // n_sites)
    sizes[: n_subjects % n_sites] += 1
    corrs, ys, sites = [], [], []
    for k, size in enumerate(sizes):
        prevalence = 0.5 if k >= n_sites - 2 else 0.5 + (0.5 - k % 2) * shortcut
        y = (np.arange(size) < round(prevalence * size)).astype(np.int64)
        y = rng.permutation(y)
        site = sample_site(pop, shift, rng)
        corrs.append(sample_subjects(pop, site, y, effect, rng))
        ys.append(y)
        sites.append(np.full(size, k))
    return Cohort(np.concatenate(corrs), np.concatenate(ys), np.concatenate(sites), pop.planted)


def fresh_sites(
    n_rois: int,
    n_subjects: int,
    *,
    shift: float,
    effect: float = 0.8,
    n_sites: int = 2,
    n_planted: int | None = None,
    seed: int = 0,
    draw: int = 0,
) -> Cohort:
    """New sites of the same population (``seed``) at shift strength ``shift``,
    prevalence 0.5: the sensitivity study's test sets (``draw`` picks the sites)."""
    pop = population(n_rois, n_planted=n_planted or max(4, n_rois // 6), seed=seed)
    rng = np.random.default_rng([seed, 3, draw])
    corrs, ys, sites = [], [], []
    for k in range(n_sites):
        size = n_subjects // n_sites
        y = rng.permutation((np.arange(size) < size // 2).astype(np.int64))
        site = sample_site(pop, shift, rng)
        corrs.append(sample_subjects(pop, site, y, effect, rng))
        ys.append(y)
        sites.append(np.full(size, k))
    return Cohort(np.concatenate(corrs), np.concatenate(ys), np.concatenate(sites), pop.planted)


def to_graphs(corr, y, site, edge_ratio: float = 0.2, env=None) -> list:
    """torch_geometric graphs as the official loader builds them: node features = the
    correlation rows, edges = the top ``edge_ratio`` of |correlation| (both directions).

    One-line errors (``core.ParameterError``) for subjects with different ROI counts,
    asymmetric or non-finite matrices, or an edge ratio outside (0, 1].
    """
    from torch_geometric.data import Data

    if not 0 < edge_ratio <= 1:
        raise core.ParameterError(
            f"edge ratio {edge_ratio!r} is outside (0, 1]; accepted: 0 < r <= 1"
        )
    shapes = {np.shape(c) for c in corr}
    if len(shapes) != 1 or len(next(iter(shapes))) != 2 or len(set(next(iter(shapes)))) != 1:
        raise core.ParameterError(
            f"subjects have different or non-square ROI counts {sorted(shapes)}; "
            "accepted: one R x R matrix per subject, the same R for all"
        )
    corr = np.asarray(corr, np.float32)
    if not np.isfinite(corr).all():
        bad = int(np.flatnonzero(~np.isfinite(corr).all(axis=(1, 2)))[0])
        raise core.ParameterError(
            f"subject {bad} has NaN or infinite connectivity; accepted: finite values"
        )
    asym = np.abs(corr - corr.transpose(0, 2, 1)).max(axis=(1, 2))
    if (asym > 1e-5).any():
        bad = int(np.flatnonzero(asym > 1e-5)[0])
        raise core.ParameterError(
            f"subject {bad} has an asymmetric connectivity matrix; accepted: symmetric"
        )
    n_rois = corr.shape[1]
    iu, ju = np.triu_indices(n_rois, 1)
    k = max(1, round(edge_ratio * len(iu)))
    env = site if env is None else env
    graphs = []
    for c, label, s, e in zip(corr, y, site, env):
        top = np.argsort(-np.abs(c[iu, ju]), kind="stable")[:k]
        src, dst = iu[top], ju[top]
        edge_index = torch.from_numpy(np.stack([np.r_[src, dst], np.r_[dst, src]]))
        graphs.append(
            Data(
                x=torch.from_numpy(c.copy()),
                edge_index=edge_index,
                y=torch.tensor([float(label)]),
                env=torch.tensor([int(e)]),
                site=torch.tensor([int(s)]),
            )
        )
    return graphs


@dataclass
class Splits:
    """GOOD-style splits: train sites (train / ID val / ID test), an OOD validation
    site and an OOD test site."""

    train: list
    id_val: list
    id_test: list
    ood_val: list
    ood_test: list


def check_sites(train_sites, ood_sites) -> None:
    """A site may not be both a training and a held-out site (one-line error)."""
    both = sorted(set(map(int, train_sites)) & set(map(int, ood_sites)))
    if both:
        raise core.ParameterError(
            f"site(s) {both} are in both the training and the OOD splits; "
            "accepted: disjoint training and held-out sites"
        )


def split(
    cohort: Cohort, ood_val_site: int, ood_test_site: int, edge_ratio: float = 0.2, seed: int = 0
):
    """Training sites' subjects 70/15/15 into train / ID val / ID test (per site);
    the environment of a training subject is its training-site index."""
    train_sites = [s for s in np.unique(cohort.site) if s not in (ood_val_site, ood_test_site)]
    check_sites(train_sites, [ood_val_site, ood_test_site])
    if ood_val_site == ood_test_site:
        raise core.ParameterError("the OOD validation and OOD test sites must differ")
    env = np.full(len(cohort.y), -1)
    for e, s in enumerate(train_sites):
        env[cohort.site == s] = e
    graphs = to_graphs(cohort.corr, cohort.y, cohort.site, edge_ratio, env)
    rng = np.random.default_rng([seed, 4])
    parts: dict[str, list] = {"train": [], "id_val": [], "id_test": []}
    for s in train_sites:
        idx = rng.permutation(np.flatnonzero(cohort.site == s))
        n_val = n_test = max(1, round(0.15 * len(idx)))
        parts["id_val"] += [graphs[i] for i in idx[:n_val]]
        parts["id_test"] += [graphs[i] for i in idx[n_val : n_val + n_test]]
        parts["train"] += [graphs[i] for i in idx[n_val + n_test :]]
    ood = {
        s: [graphs[i] for i in np.flatnonzero(cohort.site == s)]
        for s in (ood_val_site, ood_test_site)
    }
    return Splits(**parts, ood_val=ood[ood_val_site], ood_test=ood[ood_test_site])


# ---------------------------------------------------------------------------------
# The model: vGIN, feature selector, reconstruction, structure extractor
# ---------------------------------------------------------------------------------


def _gin_mlp(d_in: int, hidden: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Linear(d_in, 2 * hidden),
        nn.BatchNorm1d(2 * hidden),
        nn.ReLU(),
        nn.Linear(2 * hidden, hidden),
    )


def _high_pass_conv(mlp: nn.Module):
    """The official HPGINConv: nn(x - ((1 + eps) x + sum_j x_j))."""
    from torch_geometric.nn import GINConv

    class HighPassGINConv(GINConv):
        def forward(self, x, edge_index, size=None):
            out = self.propagate(edge_index, x=(x, x), size=size) + (1 + self.eps) * x
            return self.nn(x - out)

    return HighPassGINConv(mlp)


class VGINEncoder(nn.Module):
    """The official 2-layer vGIN encoder: conv, BN, ReLU, dropout; add the virtual node's
    embedding (with 2 layers it is never updated); conv, BN, dropout. ``high_pass`` uses
    the reconstruction head's high-pass GIN convolution."""

    def __init__(self, d_in: int, hidden: int, dropout: float = 0.5, high_pass: bool = False):
        super().__init__()
        from torch_geometric.nn import GINConv

        conv = _high_pass_conv if high_pass else GINConv
        self.conv1, self.conv2 = conv(_gin_mlp(d_in, hidden)), conv(_gin_mlp(hidden, hidden))
        self.bn1, self.bn2 = nn.BatchNorm1d(hidden), nn.BatchNorm1d(hidden)
        self.virtual_node = nn.Embedding(1, hidden)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, edge_index):
        h = self.dropout(torch.relu(self.bn1(self.conv1(x, edge_index))))
        h = h + self.virtual_node.weight
        return self.dropout(self.bn2(self.conv2(h, edge_index)))


def edge_dropout(z: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """Inverted dropout, z * 1[u >= p] / (1 - p), u ~ U(0, 1): the same distribution as
    ``nn.Dropout``, drawn with ``rand`` (on a [edges, 4h] tensor torch's Bernoulli
    sampler is several times slower on the CPU)."""
    if not training or p == 0:
        return z
    return z * (torch.rand_like(z) >= p) / (1 - p)


class EdgeExtractor(nn.Module):
    """Edge MLP [2h, 4h, h, 1] on concatenated node embeddings [h_i, h_j], InstanceNorm
    per graph, ReLU and dropout between layers: one logit per edge. The first layer is
    computed as W_i h_i + W_j h_j (W = [W_i, W_j]), the same product, on nodes first."""

    def __init__(self, hidden: int, dropout: float = 0.5):
        super().__init__()
        from torch_geometric.nn import InstanceNorm

        self.lin = nn.ModuleList(
            [nn.Linear(2 * hidden, 4 * hidden), nn.Linear(4 * hidden, hidden), nn.Linear(hidden, 1)]
        )
        self.norms = nn.ModuleList([InstanceNorm(4 * hidden), InstanceNorm(hidden)])
        self.hidden, self.p = hidden, dropout

    def forward(self, emb, edge_index, batch):
        src, dst = edge_index
        w, h = self.lin[0].weight, self.hidden
        z = (emb @ w[:, :h].T)[src] + (emb @ w[:, h:].T)[dst] + self.lin[0].bias
        graph = batch[src]
        counts = torch.bincount(graph)
        equal = bool((counts == counts[0]).all())
        for k, norm in enumerate(self.norms):
            z = z if k == 0 else self.lin[k](z)
            z = instance_norm_equal(z, len(counts)) if equal else norm(z, graph)
            z = edge_dropout(torch.relu(z), self.p, self.training)
        return self.lin[-1](z).squeeze(-1)


def instance_norm_equal(z: torch.Tensor, n_graphs: int) -> torch.Tensor:
    """torch_geometric's ``InstanceNorm`` (no affine, no running statistics: normalise
    each channel over each graph's rows, biased variance, eps 1e-5) when every graph
    has the same number of rows, as ours: statistics over a [graphs, rows, C] view,
    several times faster than the scatter-based layer."""
    rows = z.view(n_graphs, -1, z.shape[-1])
    var, mean = torch.var_mean(rows, dim=1, correction=0, keepdim=True)
    return ((rows - mean) * torch.rsqrt(var + 1e-5)).view(z.shape)


def feature_mask(embedding: torch.Tensor) -> torch.Tensor:
    """The feature selector M = sigmoid(E E^T): symmetric, in [0, 1], one for all subjects."""
    return torch.sigmoid(embedding @ embedding.T)


def concrete_sample(logits: torch.Tensor, training: bool) -> torch.Tensor:
    """att = sigmoid(l + log u - log(1 - u)), u ~ U(0, 1) in training; sigmoid(l) in eval."""
    if not training:
        return torch.sigmoid(logits)
    u = torch.empty_like(logits).uniform_(1e-10, 1 - 1e-10)
    return torch.sigmoid(logits + torch.log(u) - torch.log(1 - u))


def reverse_edges(edge_index: torch.Tensor, n_nodes: int) -> torch.Tensor:
    """perm with edge_index[:, perm[e]] = the reverse of edge e (edges come in pairs)."""
    key = edge_index[0] * n_nodes + edge_index[1]
    order = torch.argsort(key)
    rev_key = edge_index[1] * n_nodes + edge_index[0]
    return order[torch.searchsorted(key[order], rev_key)]


def symmetrise(att: torch.Tensor, edge_index: torch.Tensor, n_nodes: int) -> torch.Tensor:
    """(att_ij + att_ji) / 2, the official edge attention on undirected graphs."""
    return (att + att[reverse_edges(edge_index, n_nodes)]) / 2


def straight_through(p: torch.Tensor) -> torch.Tensor:
    """b ~ Bernoulli(p) in the forward pass, gradient 1 to p in the backward pass."""
    b = torch.bernoulli(p.detach())
    return (b - p).detach() + p


def alignment_loss(adj: torch.Tensor) -> torch.Tensor:
    """Mean over entries of the across-batch std of the dense edge-logit matrices
    [batch, R, R]: zero when every subject selects the same structure."""
    return adj.std(dim=0).mean()


def gib_loss(att: torch.Tensor, r: float, eps: float = 1e-6) -> torch.Tensor:
    """KL(Bern(att) || Bern(r)), averaged over edges, as the official code writes it."""
    return (
        att * torch.log(att / r + eps) + (1 - att) * torch.log((1 - att) / (1 - r + eps) + eps)
    ).mean()


def r_schedule(
    epoch: int, final_r: float = 0.7, init_r: float = 0.9, decay: float = 0.1, interval: int = 20
) -> float:
    """GIB's prior r: init_r, lowered by ``decay`` every ``interval`` epochs, floored at final_r."""
    return max(final_r, init_r - (epoch // interval) * decay)


class BrainNet(nn.Module):
    """vGIN with optional feature selector, reconstruction and edge extractor.

    ``rounds`` = 0 masks one pass with the soft symmetrised attention (GSAT); > 0 runs
    that many straight-through Bernoulli passes and averages the logits (BrainOOD).
    """

    def __init__(
        self,
        n_rois: int,
        *,
        selector: bool = False,
        reconstruct: bool = False,
        extractor: bool = False,
        rounds: int = 0,
        dropout: float = 0.5,
        feature_dropout: float = 0.2,
    ):
        super().__init__()
        hidden = n_rois  # the feature mask multiplies X (R x R), so hidden = R
        self.n_rois, self.rounds = n_rois, rounds
        self.encoder = VGINEncoder(n_rois, hidden, dropout)
        self.classifier = nn.Linear(hidden, 1)
        self.mask_emb = nn.Parameter(torch.randn(n_rois, n_rois)) if selector else None
        self.feature_dropout = nn.Dropout(feature_dropout)
        self.decoder = VGINEncoder(hidden, hidden, dropout, high_pass=True) if reconstruct else None
        self.extractor = EdgeExtractor(hidden, dropout) if extractor else None

    def masked_features(self, data):
        """X * M (M with dropout), and M; X and None without a selector."""
        if self.mask_emb is None:
            return data.x, None
        m = self.feature_dropout(feature_mask(self.mask_emb))
        return (data.x.view(-1, self.n_rois, self.n_rois) * m).view(-1, self.n_rois), m

    def classify(self, x, data):
        from torch_geometric.nn import global_mean_pool

        return self.classifier(
            global_mean_pool(self.encoder(x, data.edge_index), data.batch)
        ).squeeze(-1)

    def forward(self, data) -> dict:
        x, m = self.masked_features(data)
        out: dict = {}
        if self.extractor is None:
            out["logits"] = self.classify(x, data)
            return out
        emb = self.encoder(x, data.edge_index)
        if m is not None:
            out["entropy"] = torch.distributions.Categorical(logits=m).entropy().mean()
        if self.decoder is not None:
            h = self.decoder(emb, data.edge_index).view(-1, self.n_rois, self.n_rois)
            recon = torch.tanh(h @ h.transpose(1, 2)).view(-1, self.n_rois)
            out["recon"] = nn.functional.mse_loss(
                recon * m.repeat(len(h), 1) if m is not None else recon, x
            )
        out["edge_logits"] = self.extractor(emb, data.edge_index, data.batch)
        out["att"] = concrete_sample(out["edge_logits"], self.training)
        edge_att = symmetrise(out["att"], data.edge_index, data.num_nodes)
        out["edge_att"] = edge_att
        out["logits"] = self.masked_passes(data, x, edge_att)
        return out

    def masked_passes(self, data, x, edge_att):
        """Class logits from message passing masked by the edge attention."""
        from torch_geometric.explain.algorithm.utils import clear_masks, set_masks

        logits = []
        for k in range(max(1, self.rounds)):
            mask = straight_through(edge_att) if self.rounds else edge_att
            if k > 0:  # every official round draws the feature mask's dropout afresh
                x, _ = self.masked_features(data)
            set_masks(self.encoder, mask, data.edge_index, apply_sigmoid=False)
            logits.append(self.classify(x, data))
            clear_masks(self.encoder)
        return torch.stack(logits).mean(0)


# ---------------------------------------------------------------------------------
# Methods and their objectives
# ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Method:
    """A model variant and its loss weights (the shipped GOOD ABIDE configs)."""

    selector: bool = False
    reconstruct: bool = False
    extractor: bool = False
    rounds: int = 0
    penalty: str = "erm"  # erm | irm | vrex | groupdro
    penalty_weight: float = 0.0
    gib: float = 0.0
    final_r: float = 0.7
    align: float = 0.0
    recon: float = 0.0
    entropy: float = 0.0


_BRAINOOD = dict(
    selector=True,
    reconstruct=True,
    extractor=True,
    rounds=5,
    gib=0.0,
    align=0.1,
    recon=0.5,
    entropy=0.01,
)

METHODS = {
    "ERM": Method(),
    "IRM": Method(penalty="irm", penalty_weight=0.01),
    "VREx": Method(penalty="vrex", penalty_weight=100.0),
    "GroupDRO": Method(penalty="groupdro", penalty_weight=0.001),
    "GSAT": Method(extractor=True, rounds=0, gib=1.0, final_r=0.5),
    "BrainOOD": Method(**_BRAINOOD),
    "BrainOOD + GIB": Method(**{**_BRAINOOD, "gib": 1.0}),
    "no selector": Method(**{**_BRAINOOD, "selector": False}),
    "no alignment": Method(**{**_BRAINOOD, "align": 0.0}),
    "no reconstruction": Method(**{**_BRAINOOD, "reconstruct": False, "recon": 0.0}),
}
"""Every method the chapter trains; baselines on the same vGIN backbone."""


def make_model(method: Method, n_rois: int) -> BrainNet:
    return BrainNet(
        n_rois,
        selector=method.selector,
        reconstruct=method.reconstruct,
        extractor=method.extractor,
        rounds=method.rounds,
    )


def dense_logits(out: dict, data, n_rois: int) -> torch.Tensor:
    """The edge logits as dense per-graph matrices [batch, R, R] (zero off the graph)."""
    from torch_geometric.utils import to_dense_adj

    return to_dense_adj(
        data.edge_index, data.batch, edge_attr=out["edge_logits"], max_num_nodes=n_rois
    )


def objective(method: Method, model: BrainNet, data, epoch: int) -> torch.Tensor:
    """BCE plus the method's terms: IRM's squared gradient w.r.t. a dummy scale, VREx's
    variance of site losses, GroupDRO's exp-weighted site losses (all per environment),
    then GIB, alignment, reconstruction and entropy with their weights."""
    out = model(data)
    scale = torch.ones((), requires_grad=method.penalty == "irm")
    losses = nn.functional.binary_cross_entropy_with_logits(
        out["logits"] * scale, data.y, reduction="none"
    )
    envs = [losses[data.env == e] for e in torch.unique(data.env)]
    env_means = torch.stack([e.mean() for e in envs])
    if method.penalty == "irm":
        grads = [torch.autograd.grad(e.mean(), scale, create_graph=True)[0].pow(2) for e in envs]
        loss = losses.mean() + method.penalty_weight * torch.stack(grads).mean()
    elif method.penalty == "vrex":
        var = env_means.var() if len(envs) > 1 else env_means.sum() * 0
        loss = losses.mean() + method.penalty_weight * var
    elif method.penalty == "groupdro":
        weights = torch.exp(method.penalty_weight * env_means.detach())
        loss = env_means @ (weights / weights.sum())
    else:
        loss = losses.mean()
    if method.gib:
        loss = loss + method.gib * gib_loss(out["att"], r_schedule(epoch, method.final_r))
    if method.align:
        loss = loss + method.align * alignment_loss(dense_logits(out, data, model.n_rois))
    if method.recon:
        loss = loss + method.recon * out["recon"]
    if method.entropy and "entropy" in out:
        loss = loss + method.entropy * out["entropy"]
    return loss


# ---------------------------------------------------------------------------------
# Training, evaluation, ROI recovery
# ---------------------------------------------------------------------------------


@torch.no_grad()
def predict(model: BrainNet, graphs: list, batch_size: int = 128, seed: int = 0) -> np.ndarray:
    """Disorder probabilities in eval mode; BrainOOD's eval passes still draw Bernoulli
    masks (as the official code does), from a fixed seed so that they repeat."""
    from torch_geometric.loader import DataLoader

    device = next(model.parameters()).device
    model.eval()
    probs = []
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        for batch in DataLoader(graphs, batch_size=batch_size):
            probs.append(torch.sigmoid(model(batch.to(device))["logits"]).cpu())
    return torch.cat(probs).numpy()


def accuracy(model: BrainNet, graphs: list) -> float:
    y = np.array([float(g.y) for g in graphs])
    return float(((predict(model, graphs) > 0.5) == y).mean())


def fit(
    method: Method,
    splits: Splits,
    *,
    epochs: int,
    lr: float = 2e-3,
    batch_size: int = 64,
    seed: int = 0,
    device: str = "cpu",
) -> dict:
    """Adam, batches of ``batch_size``; keep the epoch of best OOD-validation accuracy
    (GOOD's model selection). Returns the kept state_dict and the validation curve."""
    from torch_geometric.loader import DataLoader

    torch.manual_seed(seed)
    n_rois = splits.train[0].x.shape[1]
    model = make_model(method, n_rois).to(device)
    optimiser = torch.optim.Adam(model.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed)
    best, best_acc, curve = None, -1.0, []
    for epoch in range(epochs):

        def batches():
            return (
                b.to(device)
                for b in DataLoader(
                    splits.train, batch_size=batch_size, shuffle=True, generator=gen
                )
            )

        core.train_epoch(
            model, optimiser, batches, lambda m, b, e=epoch: objective(method, m, b, e)
        )
        acc = accuracy(model, splits.ood_val)
        curve.append(acc)
        if acc > best_acc:
            best, best_acc = copy.deepcopy(model.state_dict()), acc
    return {
        "state": {k: v.cpu() for k, v in best.items()},
        "ood_val_curve": curve,
        "best_epoch": int(np.argmax(curve)),
    }


def load(method: Method, n_rois: int, state: dict) -> BrainNet:
    model = make_model(method, n_rois)
    model.load_state_dict(state)
    return model.eval()


@torch.no_grad()
def edge_attention(model: BrainNet, graphs: list) -> tuple[np.ndarray, np.ndarray]:
    """Mean eval attention sigmoid(l), symmetrised, as a dense [R, R] matrix over the
    graphs, and node importance: each ROI's mean attention over its incident edges,
    averaged over the graphs."""
    from torch_geometric.loader import DataLoader
    from torch_geometric.utils import scatter, to_dense_adj

    n_rois = model.n_rois
    model.eval()
    dense, nodes = np.zeros((n_rois, n_rois)), []
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        for batch in DataLoader(graphs, batch_size=128):
            att = model(batch)["edge_att"]
            dense += (
                to_dense_adj(batch.edge_index, batch.batch, edge_attr=att, max_num_nodes=n_rois)
                .sum(0)
                .numpy()
            )
            node = scatter(att, batch.edge_index[0], dim=0, dim_size=batch.num_nodes, reduce="mean")
            nodes.append(node.view(-1, n_rois).numpy())
    return dense / len(graphs), np.concatenate(nodes).mean(0)


def roi_recovery(importance: np.ndarray, planted: np.ndarray) -> dict:
    """AUROC of node importance against the planted ROIs, and precision@k (k = #planted)."""
    from sklearn.metrics import roc_auc_score

    k = int(planted.sum())
    top = np.argsort(-importance, kind="stable")[:k]
    return {
        "auroc": float(roc_auc_score(planted, importance)),
        "precision_at_k": float(planted[top].mean()),
    }


def planted_connectivity(cohort: Cohort) -> np.ndarray:
    """Each subject's mean correlation among the planted ROIs (off the diagonal)."""
    p = np.flatnonzero(cohort.planted)
    block = cohort.corr[:, p][:, :, p]
    return (block.sum(axis=(1, 2)) - len(p)) / (len(p) * (len(p) - 1))


def site_classifier_accuracy(cohort: Cohort, seed: int = 0) -> tuple[float, float]:
    """Cross-validated accuracy of a logistic regression predicting the site from the
    upper-triangle connectivity, and the chance rate (largest site's share)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_score

    iu = np.triu_indices(cohort.corr.shape[1], 1)
    features = cohort.corr[:, iu[0], iu[1]]
    clf = LogisticRegression(C=0.1, max_iter=2000)
    acc = cross_val_score(clf, features, cohort.site, cv=5).mean()
    return float(acc), float(np.bincount(cohort.site).max() / len(cohort.site))


# ---------------------------------------------------------------------------------
# The chapter's parameters
# ---------------------------------------------------------------------------------

PARAMETERS = {
    "n_subjects": Param(400, "subjects in the generated cohort", low=36),
    "n_rois": Param(50, "ROIs per subject (= the GIN's hidden width)", low=8, high=200),
    "n_sites": Param(
        6, "sites; the last two are the OOD validation and OOD test sites", low=4, high=20
    ),
    "shift": Param(1.0, "strength of the site effects (0: all sites alike)", low=0.0, high=3.0),
    "shortcut": Param(
        0.6, "prevalence gap between training sites (0.6: 0.8 vs 0.2)", low=0.0, high=0.9
    ),
    "effect": Param(0.8, "disorder effect on the planted ROIs' connectivity", low=0.0, high=3.0),
    "edge_ratio": Param(
        0.2, "share of ROI pairs kept as edges (top |correlation|)", low=0.01, high=1.0
    ),
    "epochs": Param(30, "training epochs (the paper: 50)", low=1),
    "lr": Param(0.002, "Adam learning rate", low=1e-5, high=1.0),
    "batch_size": Param(64, "graphs per batch", low=2),
    "n_seeds": Param(2, "seeds for ERM and BrainOOD", low=1, high=10),
    "n_seeds_others": Param(1, "seeds for the other baselines and the ablations", low=1, high=10),
    "seed": Param(0, "random seed (data and first training seed)", low=0),
    "device": Param("auto", "compute device", choices=("auto", "cpu", "cuda")),
}
"""The chapter's parameters: the notebook's parameters cell repeats these defaults."""

SMOKE = {"n_subjects": 40, "n_rois": 20, "epochs": 2}
"""Overrides that run the whole chapter in seconds (the notebook test)."""

# ---------------------------------------------------------------------------------
# The claims: one registry, fixed before the run (issue #28)
# ---------------------------------------------------------------------------------

CLAIMS: dict[str, ClaimSpec] = {
    # ERM's ID-test minus OOD-test accuracy, points, mean over seeds
    "shift_is_real": ClaimSpec(
        "ERM loses accuracy from the training sites to a held-out site",
        kind="setup",
        rule=Bound(ge=5),
        control="ERM's own accuracy on the training sites' ID-test subjects",
    ),
    # BrainOOD's OOD-test accuracy minus ERM's, points, means over the seeds run
    "ood_gain": ClaimSpec(
        "BrainOOD is more accurate than ERM on the held-out site",
        paper="up to +8.5 points OOD (abstract, Table 2)",
        rule=Bound(ge=2),
        control="ERM on the same backbone, data and schedule",
        rests_on=("shift_is_real",),
    ),
    # BrainOOD's OOD-test accuracy minus the best of IRM, VREx, GroupDRO, GSAT, points
    "beats_ood_baselines": ClaimSpec(
        "BrainOOD is at least as accurate on OOD as the best graph-OOD baseline",
        paper="outperforms 16 existing methods (abstract; Table 2, ABIDE "
        "and ADNI site splits, 10-fold CV)",
        rule=Bound(ge=0),
        control="the best of IRM, VREx, GroupDRO and GSAT on the same backbone",
        rests_on=("shift_is_real",),
    ),
    # BrainOOD's planted-ROI AUROC, and its margin over GSAT's
    "roi_recovery": ClaimSpec(
        "BrainOOD's edge attention ranks the planted (disorder) ROIs first",
        paper="not reported as a score (real data have no ground-truth ROIs); "
        "the case studies find regions reported in the literature",
        rule={"auroc": Bound(ge=0.8), "minus_gsat": Bound(ge=0)},
        control="GSAT's edge attention, and a fixed AUROC threshold of 0.8 (no "
        "random-ranking control run)",
    ),
}
"""Claim id -> what it says, the rule that decides it, its control and what it rests on."""


# ---------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------


def accuracy_figure(table) -> go.Figure:
    """Grouped bars: ID-test and OOD-test accuracy per method, mean +- sd over seeds.
    ``table``: DataFrame with columns method, split, mean, sd."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for split_name, part in table.groupby("split", sort=False):
        fig.add_bar(
            x=part["method"],
            y=part["mean"],
            name=split_name,
            error_y=dict(type="data", array=part["sd"].fillna(0)),
        )
    fig.update_layout(
        barmode="group", title="Accuracy on training sites (ID) and held-out sites (OOD)"
    )
    fig.update_yaxes(title_text="accuracy", range=[0.4, 1.0])
    return fig


def structure_figure(attention: np.ndarray, mask: np.ndarray, planted: np.ndarray) -> go.Figure:
    """Heatmaps side by side: BrainOOD's mean edge attention, its feature mask M, and the
    planted sub-network (1 where both ROIs are planted)."""
    from plotly.subplots import make_subplots

    truth = np.outer(planted, planted).astype(float)
    np.fill_diagonal(truth, 0)
    titles = ("mean edge attention", "feature mask M", "planted sub-network")
    fig = make_subplots(rows=1, cols=3, subplot_titles=titles, horizontal_spacing=0.06)
    for k, (z, scale) in enumerate(zip((attention, mask, truth), ("Viridis", "Cividis", "Greys"))):
        fig.add_heatmap(z=z, colorscale=scale, showscale=False, row=1, col=k + 1)
        fig.update_yaxes(
            autorange="reversed", scaleanchor=f"x{k + 1}" if k else "x", row=1, col=k + 1
        )
    fig.update_layout(title="What BrainOOD selects, beside the planted ROIs", height=380)
    return fig
