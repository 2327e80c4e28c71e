"""Document (or window) frequencies of a few words and of the word pairs that share a topic.

Topic coherence (topicscale/coherence.py) needs, for the top words of every topic, how many
reference documents, or sliding windows of a document, contain each word and each pair of
words of one topic. A dense count over
all pairs of the union of top words would hold (K n)^2 counts (10^8 at K = 1000, n = 10); only
the pairs within a topic are counted here (at most K n (n - 1) / 2), each visited from the
present word through its list of partners, so a document costs its length plus the partners of
the top words it holds.
"""
from numba import njit


@njit(cache=True)
def count_documents(indptr, indices, lookup, partner_ptr, partner, partner_slot, first, mark,
                    present, df, pair_df):
    """Add one CSR block of documents to the counts.

    lookup[v]: the top-word number of vocabulary word v, or -1. partner[partner_ptr[a]:
    partner_ptr[a + 1]]: the top words b > a that share a topic with a, and partner_slot the
    index of the pair (a, b) in pair_df. first: the number of the block's first document over
    the whole pass (documents are stamped first + d + 1 in `mark`, which starts at zeros and
    is kept between blocks); present: scratch of one entry a top word. A word listed twice in
    a document counts once."""
    for d in range(indptr.shape[0] - 1):
        stamp = first + d + 1
        m = 0
        for p in range(indptr[d], indptr[d + 1]):
            a = lookup[indices[p]]
            if a >= 0 and mark[a] != stamp:
                mark[a] = stamp
                df[a] += 1
                present[m] = a
                m += 1
        for i in range(m):
            a = present[i]
            for q in range(partner_ptr[a], partner_ptr[a + 1]):
                if mark[partner[q]] == stamp:
                    pair_df[partner_slot[q]] += 1


@njit(cache=True)
def count_windows(tokptr, tokens, lookup, adj_ptr, adj, adj_slot, window, count, start, pair_start,
                  df, pair_df):
    """Add the sliding windows of one block of documents in reading order to the counts.

    The boolean sliding window (Röder et al. 2015), with gensim's windows: a document of L
    tokens (-1 for words outside the vocabulary keeps its place) has the windows
    tokens[t:t + window], t = 0..L - window, or itself as one window when L <= window. A word
    (pair) counts once for each window holding it (both). Rather than scanning every window,
    the presence of each top word and pair is followed as the window slides: it becomes
    present when a token enters and absent when its last token leaves, and adds the number of
    windows in between. adj[adj_ptr[a]:adj_ptr[a + 1]]: every top word sharing a topic with a
    (both directions), adj_slot: the pair's index in pair_df. count, start (one entry a top
    word, count all zero) and pair_start (one a pair) are scratch. Returns the windows counted."""
    n_windows = 0
    for d in range(tokptr.shape[0] - 1):
        first, end = tokptr[d], tokptr[d + 1]
        W = max(end - first - window + 1, 1)
        n_windows += W
        for p in range(first, min(end, first + window)):
            _enter(tokens[p], 0, lookup, adj_ptr, adj, adj_slot, count, start, pair_start)
        for t in range(1, W):
            _leave(tokens[first + t - 1], t, lookup, adj_ptr, adj, adj_slot, count, start, pair_start,
                   df, pair_df)
            _enter(tokens[first + t + window - 1], t, lookup, adj_ptr, adj, adj_slot, count, start,
                   pair_start)
        for p in range(first + W - 1, min(end, first + W - 1 + window)):       # the last window
            x = tokens[p]
            if x < 0 or lookup[x] < 0 or count[lookup[x]] == 0:
                continue
            a = lookup[x]
            df[a] += W - start[a]
            for q in range(adj_ptr[a], adj_ptr[a + 1]):
                if count[adj[q]] > 0:
                    pair_df[adj_slot[q]] += W - pair_start[adj_slot[q]]
            count[a] = 0
    return n_windows


@njit(cache=True)
def _enter(x, t, lookup, adj_ptr, adj, adj_slot, count, start, pair_start):
    """Token x enters the window t."""
    if x < 0 or lookup[x] < 0:
        return
    a = lookup[x]
    count[a] += 1
    if count[a] == 1:
        start[a] = t
        for q in range(adj_ptr[a], adj_ptr[a + 1]):
            if count[adj[q]] > 0:
                pair_start[adj_slot[q]] = t


@njit(cache=True)
def _leave(x, t, lookup, adj_ptr, adj, adj_slot, count, start, pair_start, df, pair_df):
    """Token x is not in the window t, which follows the last one holding it."""
    if x < 0 or lookup[x] < 0:
        return
    a = lookup[x]
    count[a] -= 1
    if count[a] == 0:
        df[a] += t - start[a]
        for q in range(adj_ptr[a], adj_ptr[a + 1]):
            if count[adj[q]] > 0:
                pair_df[adj_slot[q]] += t - pair_start[adj_slot[q]]
