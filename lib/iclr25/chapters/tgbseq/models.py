"""The five models of the TGB-Seq chapter: each scores candidate links (u, v, t).

EdgeBank (unlimited memory), GraphMixer, DyGFormer, SASRec and JODIE, a memory
model, with DyGLib's time encoding and link classifier, and the binary cross-entropy
against sampled negatives they train with. They read the stream through the "recent"
neighbour sampler of ``stream.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import nn

if TYPE_CHECKING:
    from iclr25.chapters.tgbseq.stream import RecentNeighbors, Stream

# ---------------------------------------------------------------------------------
# Models: all score a batch of candidate links (user u, item v, time t)
# ---------------------------------------------------------------------------------


class EdgeBank:
    """EdgeBank with unlimited memory (Poursafaei et al. 2022): 1 if (u, v) was seen before t."""

    def __init__(self, stream: Stream):
        key = stream.src.astype(np.int64) * stream.n_items + stream.dst
        self.n_items = stream.n_items
        self.keys, first = np.unique(key, return_index=True)
        self.first_time = stream.t[first]

    def score(self, u: np.ndarray, v: np.ndarray, t: np.ndarray) -> np.ndarray:
        key = np.asarray(u, dtype=np.int64) * self.n_items + np.asarray(v)
        i = np.searchsorted(self.keys, key).clip(max=len(self.keys) - 1)
        return ((self.keys[i] == key) & (self.first_time[i] < np.asarray(t))).astype(np.float64)


class TimeEncoder(nn.Module):
    """DyGLib's time encoding cos(dt w + b), w_i = 10^(-9 (i-1) / (d-1)); fixed for GraphMixer."""

    def __init__(self, dim: int, trainable: bool):
        super().__init__()
        self.w = nn.Parameter(10.0 ** -torch.linspace(0, 9, dim), requires_grad=trainable)
        self.b = nn.Parameter(torch.zeros(dim), requires_grad=trainable)

    def forward(self, dt: torch.Tensor) -> torch.Tensor:
        return torch.cos(dt.unsqueeze(-1) * self.w + self.b)


class MergeLayer(nn.Module):
    """DyGLib's link classifier: logit = W2 relu(W1 [h_u ; h_v])."""

    def __init__(self, dim: int):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2 * dim, dim), nn.ReLU(), nn.Linear(dim, 1))

    def forward(self, h_u: torch.Tensor, h_v: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([h_u, h_v], -1)).squeeze(-1)


class TemporalLinkModel(nn.Module):
    """A model that scores links (u, v, t) from the stream's history before t.

    Where the user's side does not depend on the candidate (``separable``), the logit
    is ``pair_logit(user_state(u, t), v, t)``, and the state is computed once for the
    positive and all negatives of a query.
    """

    separable = True

    def __init__(self, sampler: RecentNeighbors):
        super().__init__()
        self.sampler = sampler

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    def tensor(self, a: np.ndarray, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        return torch.as_tensor(a, dtype=dtype, device=self.device)

    def user_state(self, u: np.ndarray, t: np.ndarray) -> torch.Tensor:
        raise NotImplementedError

    def pair_logit(self, state: torch.Tensor, v: np.ndarray, t: np.ndarray) -> torch.Tensor:
        raise NotImplementedError

    def forward(self, u: np.ndarray, v: np.ndarray, t: np.ndarray) -> torch.Tensor:
        return self.pair_logit(self.user_state(u, t), v, t)

    def pos_neg_logits(
        self, u: np.ndarray, v: np.ndarray, neg: np.ndarray, t: np.ndarray
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits of the positives (u, v, t) and of the negatives (u, neg, t)."""
        if not self.separable:
            return self(u, v, t), self(u, neg, t)
        state = self.user_state(u, t)
        return self.pair_logit(state, v, t), self.pair_logit(state, neg, t)

    @torch.no_grad()
    def score(self, u: np.ndarray, v: np.ndarray, t: np.ndarray, chunk: int = 4096) -> np.ndarray:
        """Logits of many links, in chunks, without gradients."""
        self.eval()
        if not self.separable:
            return np.concatenate(
                [
                    self(u[i : i + chunk], v[i : i + chunk], t[i : i + chunk]).cpu().numpy()
                    for i in range(0, len(u), chunk)
                ]
            )
        queries, row = np.unique(np.stack([u, t], 1), axis=0, return_inverse=True)
        state = torch.cat(
            [
                self.user_state(
                    queries[i : i + chunk, 0].astype(np.int64), queries[i : i + chunk, 1]
                )
                for i in range(0, len(queries), chunk)
            ]
        )
        return np.concatenate(
            [
                self.pair_logit(state[row[i : i + chunk]], v[i : i + chunk], t[i : i + chunk])
                .cpu()
                .numpy()
                for i in range(0, len(u), chunk)
            ]
        )


class GraphMixer(TemporalLinkModel):
    """GraphMixer (Cong et al. 2023): an MLP-Mixer over a node's K latest links.

    Link encoder: each of the K latest links of node x before t is a token, the fixed
    time encoding cos(w (t - t_i)) concatenated with the link's edge features (where the
    stream has them), zero for missing links; ``layers`` Mixer blocks (DyGLib's default 2: a
    token-mixing MLP across the K tokens, a channel-mixing MLP across features, both
    residual after LayerNorm), mean over tokens,
    linear. The node encoder (mean of neighbours' node features) is empty without node
    features. The classifier is an MLP on [h_u ; h_v].
    """

    def __init__(self, sampler: RecentNeighbors, k: int = 20, dim: int = 64, layers: int = 2):
        super().__init__(sampler)
        self.k = k
        self.time = TimeEncoder(dim, trainable=False)
        self.proj = nn.Linear(dim + sampler.stream.n_features, dim)
        self.blocks = nn.ModuleList(
            nn.ModuleDict(
                {
                    "token_norm": nn.LayerNorm(dim),
                    "token_mix": nn.Sequential(
                        nn.Linear(k, max(1, k // 2)), nn.GELU(), nn.Linear(max(1, k // 2), k)
                    ),
                    "channel_norm": nn.LayerNorm(dim),
                    "channel_mix": nn.Sequential(
                        nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim)
                    ),
                }
            )
            for _ in range(layers)
        )
        self.out = nn.Linear(dim, dim)
        self.classifier = MergeLayer(dim)

    def encode(self, nodes: np.ndarray, t: np.ndarray) -> torch.Tensor:
        ids, times, mask = self.sampler(nodes, t, self.k)
        m = self.tensor(mask).unsqueeze(-1)
        feat = self.tensor(self.sampler.link_features(nodes, ids, mask))
        x = self.proj(torch.cat([self.time(self.tensor(t[:, None] - times)) * m, feat], -1))
        for b in self.blocks:
            x = x + b["token_mix"](b["token_norm"](x).transpose(1, 2)).transpose(1, 2)
            x = x + b["channel_mix"](b["channel_norm"](x))
        return self.out(x.mean(1))

    def user_state(self, u: np.ndarray, t: np.ndarray) -> torch.Tensor:
        return self.encode(u, t)

    def pair_logit(self, state: torch.Tensor, v: np.ndarray, t: np.ndarray) -> torch.Tensor:
        return self.classifier(state, self.encode(v + self.sampler.n_users, t))


class DyGFormer(TemporalLinkModel):
    """DyGFormer (Yu et al. 2023): a transformer over patches of first-hop histories.

    Each of u and v gets the sequence S_x of its L - 1 latest neighbours before t, with
    x itself (time t) at the head. Every element w of S_u is encoded by its time
    encoding, its link's edge features (where the stream has them) and the neighbour
    co-occurrence encoding f(c(w, S_u)) + f(c(w, S_v)),
    c = how often w occurs in a sequence, f: R -> R^d a 2-layer MLP (likewise for S_v).
    Each encoding is cut into L / P patches of P elements, flattened and projected; the
    patches of u and of v are concatenated into one sequence for a transformer encoder,
    then averaged per node into h_u, h_v for the MLP classifier.
    """

    separable = False  # the co-occurrence encoding of u's history depends on v

    def __init__(
        self,
        sampler: RecentNeighbors,
        seq_len: int = 32,
        patch: int = 4,
        dim: int = 32,
        layers: int = 2,
        heads: int = 2,
        dropout: float = 0.1,
    ):
        super().__init__(sampler)
        if seq_len % patch:
            raise ValueError(f"DyGFormer: seq_len {seq_len} must be a multiple of patch {patch}")
        self.seq_len, self.patch = seq_len, patch
        self.time = TimeEncoder(dim, trainable=True)
        self.cooc = nn.Sequential(nn.Linear(1, dim), nn.ReLU(), nn.Linear(dim, dim))
        self.patch_time, self.patch_cooc = nn.Linear(patch * dim, dim), nn.Linear(patch * dim, dim)
        n_feat = sampler.stream.n_features
        self.patch_feat = nn.Linear(patch * n_feat, dim) if n_feat else None
        width = (3 if n_feat else 2) * dim  # channels: time, co-occurrence (, edge features)
        layer = nn.TransformerEncoderLayer(
            width, heads, 4 * width, dropout, batch_first=True, norm_first=True
        )
        self.transformer = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.out = nn.Linear(width, dim)
        self.classifier = MergeLayer(dim)

    def history(
        self, nodes: np.ndarray, t: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """[x, its L - 1 latest neighbours], the time gaps t - t_w and the links' edge
        features (ids -1 where missing; x's own slot has gap and features 0)."""
        ids, times, mask = self.sampler(nodes, t, self.seq_len - 1)
        feat = self.sampler.link_features(nodes, ids, mask)
        feat = np.concatenate([np.zeros_like(feat[:, :1]), feat], 1)
        ids = np.concatenate([nodes[:, None], ids], 1)
        gaps = np.concatenate(
            [np.zeros((len(nodes), 1)), np.where(mask, t[:, None] - times, 0.0)], 1
        )
        return ids, gaps, feat

    def cooccurrence(self, s_x: torch.Tensor, s_y: torch.Tensor) -> torch.Tensor:
        """f(c(w, S_x)) + f(c(w, S_y)) for every w in S_x; 0 where w is missing."""
        valid = (s_x >= 0).unsqueeze(-1)
        counts = torch.stack(
            [(s_x.unsqueeze(2) == s.unsqueeze(1)).float().sum(2) for s in (s_x, s_y)], -1
        )
        return (self.cooc(counts.unsqueeze(-1)).sum(2)) * valid

    def patches(self, x: torch.Tensor, proj: nn.Linear) -> torch.Tensor:
        b, length, d = x.shape
        return proj(x.reshape(b, length // self.patch, self.patch * d))

    def forward(self, u: np.ndarray, v: np.ndarray, t: np.ndarray) -> torch.Tensor:
        (su, gu, fu), (sv, gv, fv) = self.history(u, t), self.history(v + self.sampler.n_users, t)
        su, sv = self.tensor(su, torch.long), self.tensor(sv, torch.long)
        encoded = []
        for s_x, s_y, gaps, feat in ((su, sv, gu, fu), (sv, su, gv, fv)):
            time = self.time(self.tensor(gaps)) * (s_x >= 0).unsqueeze(-1)
            channels = [
                self.patches(time, self.patch_time),
                self.patches(self.cooccurrence(s_x, s_y), self.patch_cooc),
            ]
            if self.patch_feat is not None:
                channels.append(self.patches(self.tensor(feat), self.patch_feat))
            encoded.append(torch.cat(channels, -1))
        z = self.transformer(torch.cat(encoded, 1))
        h_u, h_v = z.chunk(2, dim=1)
        return self.classifier(self.out(h_u.mean(1)), self.out(h_v.mean(1)))


class SASRec(TemporalLinkModel):
    """SASRec (Kang & McAuley 2018): causal self-attention over a user's item sequence.

    The user's L latest items before t, embedded (E_item + positional) and passed through
    causal transformer blocks; the output F at the last position scores a candidate
    item v as F . E_v (the item embedding is shared). Trained on every position of the
    users' training sequences: F_i should score item i + 1 above a random item.
    """

    def __init__(
        self,
        sampler: RecentNeighbors,
        n_items: int,
        max_len: int = 32,
        dim: int = 64,
        layers: int = 2,
        heads: int = 1,
        dropout: float = 0.2,
    ):
        super().__init__(sampler)
        self.max_len = max_len
        self.item = nn.Embedding(n_items + 1, dim, padding_idx=0)  # item i is row i + 1
        self.position = nn.Embedding(max_len, dim)
        self.dropout = nn.Dropout(dropout)
        layer = nn.TransformerEncoderLayer(
            dim, heads, dim, dropout, batch_first=True, norm_first=True
        )
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.register_buffer("causal", nn.Transformer.generate_square_subsequent_mask(max_len))

    def sequence(self, seq: torch.Tensor) -> torch.Tensor:
        """Outputs F_i at every position of left-padded item sequences (0 = padding)."""
        x = self.item(seq) * self.item.embedding_dim**0.5 + self.position.weight
        x = self.dropout(x) * (seq > 0).unsqueeze(-1)
        return self.norm(self.blocks(x, mask=self.causal))

    def user_state(self, u: np.ndarray, t: np.ndarray) -> torch.Tensor:
        """F at the last position of the user's latest items before t."""
        ids, _, mask = self.sampler(u, t, self.max_len)
        return self.sequence(
            self.tensor(np.where(mask, ids - self.sampler.n_users + 1, 0), torch.long)
        )[:, -1]

    def pair_logit(self, state: torch.Tensor, v: np.ndarray, t: np.ndarray) -> torch.Tensor:
        return (state * self.item(self.tensor(v + 1, torch.long))).sum(-1)


class JODIE(TemporalLinkModel):
    """JODIE (Kumar et al. 2019) as DyGLib / TGB-Seq run it: a memory per node, updated
    by an RNN cell, and JODIE's time-projection embedding.

    Every node x keeps a memory s_x, zero at the start of the stream. The stream is read
    in chronological batches; an interaction (u, v, t) leaves each end a raw message
    [s_self ; s_other ; phi(t - t_last) ; edge features] (the memory models' identity
    message), only the latest per node is kept (TGB-Seq's "last" aggregation), and the
    batch after, an RNN cell updates the memory with it: s_x <- RNN(message, s_x)
    (DyGLib's JODIE; its TGN has a GRU here). The embedding of x at query time t is
    JODIE's time projection h_x = s_x * (1 + W dt), where dt is the time since x's last
    update, standardised by the mean and standard deviation of the users' (or the
    items') time shifts in the training split, as DyGLib standardises them (TGN differs
    in this step: its graph attention over the neighbours' memories is not built
    here), and DyGLib's MLP classifier scores [h_u ; h_v]. A query at time t sees the
    memory after every batch whose interactions all precede t; training
    backpropagates through the latest memory update.
    """

    def __init__(
        self,
        sampler: RecentNeighbors,
        dim: int = 32,
        batch_size: int = 200,
        dropout: float = 0.1,
        n_train: int | None = None,
    ):
        super().__init__(sampler)
        s = sampler.stream
        self.dim, self.batch_size, self.n_nodes = dim, batch_size, s.n_users + s.n_items
        feat = np.zeros((s.n_items, 0)) if s.item_feat is None else s.item_feat
        self.register_buffer("feat", torch.as_tensor(feat, dtype=torch.float32), persistent=False)
        self.time = TimeEncoder(dim, trainable=True)
        self.rnn = nn.RNNCell(3 * dim + feat.shape[1], dim)
        self.project = nn.Linear(1, dim)
        self.dropout = nn.Dropout(dropout)
        self.classifier = MergeLayer(dim)
        end = len(s) if n_train is None else n_train
        shift = [time_shifts(ids[:end], s.t[:end]) for ids in (s.src, s.dst)]
        mean, std = (np.array([stat(shift[0]), stat(shift[1])]) for stat in (np.mean, np.std))
        std = np.where(std > 0, std, 1.0)  # a kind whose shifts are all equal: no scale
        counts = [s.n_users, s.n_items]  # per node, the statistics of its kind
        self.shift = (np.repeat(mean, counts), np.repeat(std, counts))
        self.reset_memory()

    def reset_memory(self) -> None:
        """Zero memories, last-update times and pending messages (start of the stream)."""
        device = self.feat.device
        self.memory = torch.zeros(self.n_nodes, self.dim, device=device)
        self.last = torch.zeros(self.n_nodes, dtype=torch.float64, device=device)
        self.pending: tuple[np.ndarray, ...] | None = None

    def advance(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Memories and last-update times after the pending messages (with gradients)."""
        if self.pending is None:
            return self.memory, self.last
        node, other, when, item = (
            torch.as_tensor(a, device=self.feat.device) for a in self.pending
        )
        gap = (when - self.last[node]).float()
        message = torch.cat(
            [self.memory[node], self.memory[other], self.time(gap), self.feat[item]], -1
        )
        memory = self.memory.index_put((node,), self.rnn(message, self.memory[node]))
        return memory, self.last.index_put((node,), when)

    def commit(self, memory: torch.Tensor, last: torch.Tensor, events: np.ndarray) -> None:
        """Keep ``memory`` (detached) and queue the raw messages of ``events`` (indices)."""
        s, n_users = self.sampler.stream, self.sampler.n_users
        self.memory, self.last = memory.detach(), last
        u, v = s.src[events], s.dst[events] + n_users
        node, other = np.r_[u, v], np.r_[v, u]
        keep = len(node) - 1 - np.unique(node[::-1], return_index=True)[1]  # latest per node
        self.pending = (
            node[keep],
            other[keep],
            np.r_[s.t[events], s.t[events]][keep],
            np.r_[s.dst[events], s.dst[events]][keep],
        )

    def embed(
        self, memory: torch.Tensor, last: torch.Tensor, nodes: np.ndarray, t: np.ndarray
    ) -> torch.Tensor:
        mean, std = (torch.as_tensor(a[nodes], device=memory.device) for a in self.shift)
        nodes = torch.as_tensor(nodes, device=memory.device)
        gap = (torch.as_tensor(t, device=memory.device) - last[nodes] - mean) / std
        return self.dropout(memory[nodes] * (1 + self.project(gap.float().unsqueeze(-1))))

    def batch_loss(self, batch: tuple[np.ndarray, ...]) -> torch.Tensor:
        """BCE of one training batch (event indices, negative items), then its messages."""
        events, neg = batch
        s, n_users = self.sampler.stream, self.sampler.n_users
        memory, last = self.advance()
        t = s.t[events]
        h_u = self.embed(memory, last, s.src[events], t)
        logits = [
            self.classifier(h_u, self.embed(memory, last, items + n_users, t))
            for items in (s.dst[events], neg)
        ]
        self.commit(memory, last, events)
        return bce(*logits)

    @torch.no_grad()
    def score(self, u: np.ndarray, v: np.ndarray, t: np.ndarray, chunk: int = 4096) -> np.ndarray:
        """Logits of links (u, v, t): the stream is replayed from zero memory in batches;
        a query sees the batches whose interactions all precede its time."""
        self.eval()
        s, n_users, b = self.sampler.stream, self.sampler.n_users, self.batch_size
        step = np.searchsorted(s.t, t, side="left") // b  # batches wholly before t
        out = np.empty(len(u), dtype=np.float32)
        self.reset_memory()
        for k in range(int(step.max()) + 1 if len(u) else 0):
            memory, last = self.advance()
            q = np.flatnonzero(step == k)
            if len(q):
                h_u = self.embed(memory, last, u[q], t[q])
                h_v = self.embed(memory, last, v[q] + n_users, t[q])
                out[q] = self.classifier(h_u, h_v).cpu().numpy()
            events = np.arange(k * b, min((k + 1) * b, len(s)))
            if len(events):
                self.commit(memory, last, events)
        self.reset_memory()
        return out


def time_shifts(nodes: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Each interaction's time since the previous one of its node (since 0 for the
    node's first), over interactions in time order: DyGLib's time shifts, whose mean
    and standard deviation standardise JODIE's time projection."""
    order = np.argsort(nodes, kind="stable")  # by node, in time order within a node
    n, times = nodes[order], t[order].astype(np.float64)
    previous = np.r_[0.0, times[:-1]]
    previous[np.r_[True, n[1:] != n[:-1]]] = 0.0
    return times - previous


# ---------------------------------------------------------------------------------
# The loss of every trained model: positives against sampled negatives
# ---------------------------------------------------------------------------------


def bce(logits_pos: torch.Tensor, logits_neg: torch.Tensor) -> torch.Tensor:
    """Binary cross-entropy: positives labelled 1, sampled negatives 0."""
    f = nn.functional.binary_cross_entropy_with_logits
    return f(logits_pos, torch.ones_like(logits_pos)) + f(logits_neg, torch.zeros_like(logits_neg))
