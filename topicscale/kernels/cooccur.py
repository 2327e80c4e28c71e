"""Document frequencies of a few words and of the word pairs that share a topic, in one pass.

Topic coherence (topicscale/coherence.py) needs, for the top words of every topic, how many
reference documents contain each word and each pair of words of one topic. A dense count over
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
