"""A user-item stream and DyGLib's "recent" neighbour sampler: what every model of
the TGB-Seq chapter reads (``models.py``) and what its protocol splits and ranks
(``method.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Stream:
    """A user-item interaction stream sorted by time; item ids are 0..n_items-1.

    ``item_feat`` (optional, [n_items, f]) is the edge feature of every interaction
    with an item: a fixed vector per item, as text features name the page on Wikipedia.
    """

    src: np.ndarray  # user of each interaction
    dst: np.ndarray  # item of each interaction
    t: np.ndarray  # time of each interaction, non-decreasing
    n_users: int
    n_items: int
    item_feat: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.t)

    @property
    def n_features(self) -> int:
        return 0 if self.item_feat is None else self.item_feat.shape[1]


# ---------------------------------------------------------------------------------
# The "recent" neighbour sampler
# ---------------------------------------------------------------------------------


class RecentNeighbors:
    """DyGLib's "recent" sampler: the k latest interactions of a node strictly before t.

    Users are nodes 0..n_users-1 and items n_users..n_users+n_items-1. Built once over
    the whole stream; a query at time t never sees an interaction at t or later, so the
    same index serves training, validation and test without leaking the future.
    """

    def __init__(self, stream: Stream):
        self.stream, self.n_users = stream, stream.n_users
        nodes = np.r_[stream.src, stream.dst + stream.n_users]
        self.t0, self.span = float(stream.t.min()), float(np.ptp(stream.t)) + 1.0
        keys = nodes * self.span + (np.r_[stream.t, stream.t] - self.t0)  # sorted by (node, t)
        order = np.argsort(keys, kind="stable")
        self.keys = keys[order]
        self.neighbor = np.r_[stream.dst + stream.n_users, stream.src][order]
        self.time = np.r_[stream.t, stream.t][order]
        n_nodes = stream.n_users + stream.n_items
        self.start = np.searchsorted(self.keys, np.arange(n_nodes) * self.span)

    def __call__(
        self, nodes: np.ndarray, times: np.ndarray, k: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Neighbour ids, times and a validity mask, each [B, k], oldest first, right-aligned.

        Missing slots (fewer than k earlier links) have id -1, time 0 and mask False.
        """
        nodes, times = np.asarray(nodes), np.asarray(times, dtype=np.float64)
        offset = np.clip(times - self.t0, 0.0, self.span - 0.5)  # stay in the node's range
        end = np.searchsorted(self.keys, nodes * self.span + offset, side="left")
        idx = end[:, None] - k + np.arange(k)
        mask = idx >= self.start[nodes][:, None]
        idx = np.where(mask, idx, 0)
        return np.where(mask, self.neighbor[idx], -1), np.where(mask, self.time[idx], 0.0), mask

    def link_features(self, nodes: np.ndarray, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """[B, k, f] edge features of the links (nodes[b], ids[b, j]); zero where missing.

        A link's feature is its item's (``Stream.item_feat``): the neighbour's for a
        user, the node's own for an item. Shape [B, k, 0] without features.
        """
        feat = self.stream.item_feat
        if feat is None:
            return np.zeros((*ids.shape, 0), dtype=np.float32)
        nodes = np.broadcast_to(np.asarray(nodes)[:, None], ids.shape)
        item = np.where(nodes < self.n_users, ids, nodes) - self.n_users
        return np.where(mask[..., None], feat[np.where(mask, item, 0)], 0.0).astype(np.float32)
