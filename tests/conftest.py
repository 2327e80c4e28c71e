import numpy as np
import pytest

from synthetic import lda_documents, planted_topics, write_corpus


@pytest.fixture(scope="session")
def planted(tmp_path_factory):
    """A synthetic LDA corpus (10 planted topics, 500 words) with a held-out part."""
    rng = np.random.default_rng(2024)
    beta = planted_topics(10, 500, rng)
    root = tmp_path_factory.mktemp("planted")
    train = write_corpus(root / "train", lda_documents(beta, 3000, 80, 0.2, rng), 500, shard_docs=700)
    heldout = write_corpus(root / "heldout", lda_documents(beta, 300, 80, 0.2, rng), 500)
    return beta, train, heldout
