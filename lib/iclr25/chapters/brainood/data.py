"""The brainood chapter's data: generated multi-site connectomes (a latent network
model with a planted disorder sub-network and site effects), the brain-network graphs
built from them as the official loader builds them, and the GOOD-style site splits."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from iclr25 import core

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
    planted: np.ndarray  # [R] bool, the ROIs the disorder touches at this site


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


def sample_site(
    pop: Population, shift: float, rng: np.random.Generator, drift: float = 0.0
) -> Site:
    """A site whose effects all vanish at ``shift`` = 0 (every site then alike).

    Global-signal loading shift * U(0.2, 0.6); noise sd exp(shift * U(-0.4, 0.4)); ROI
    scale exp(0.3 shift z); a spurious factor on R/5 random ROIs, loading shift * U(0.5, 0.8).
    ``drift`` > 0 moves that share of the planted ROIs to other ROIs at this site, so
    that the disorder's sub-network is no longer the same at every site.
    """
    n_rois = len(pop.loading)
    spurious = np.zeros(n_rois)
    rois = rng.choice(n_rois, max(2, n_rois // 5), replace=False)
    spurious[rois] = shift * rng.uniform(0.5, 0.8, len(rois))
    site = Site(
        global_signal=shift * rng.uniform(0.2, 0.6),
        noise=float(np.exp(shift * rng.uniform(-0.4, 0.4))),
        scale=np.exp(0.3 * shift * rng.standard_normal(n_rois)),
        spurious=spurious,
        planted=pop.planted.copy(),
    )
    k = round(drift * pop.planted.sum())
    if k:
        site.planted[rng.choice(np.flatnonzero(pop.planted), k, replace=False)] = False
        site.planted[rng.choice(np.flatnonzero(~pop.planted), k, replace=False)] = True
    return site


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
    with community factors f, a disorder factor g on the site's planted ROIs of strength
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
        neural = a * f[:, pop.community] + b * site.planted * g + site.spurious * h
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
    drift: float = 0.0,
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
        site = sample_site(pop, shift, rng, drift)
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
    drift: float = 0.0,
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
        site = sample_site(pop, shift, rng, drift)
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
