"""Intertopic distance map: Jensen-Shannon divergences and their principal coordinates."""
import numpy as np
import pytest
from scipy.spatial.distance import jensenshannon, pdist, squareform

from topicscale.topic_map import intertopic_coordinates, js_divergences, principal_coordinates


def test_planted_euclidean_points_are_recovered_up_to_rotation_and_sign():
    rng = np.random.default_rng(7)
    points = rng.normal(size=(9, 2)) * [3.0, 1.0]
    coords = principal_coordinates(squareform(pdist(points)))
    assert coords.shape == (9, 2)
    np.testing.assert_allclose(pdist(coords), pdist(points), atol=1e-10)
    np.testing.assert_allclose(coords.mean(axis=0), 0, atol=1e-12)
    # The first axis carries the larger spread, as the largest eigenvalue comes first.
    assert coords[:, 0].var() > coords[:, 1].var()


def test_higher_dimensional_points_keep_their_two_main_axes():
    rng = np.random.default_rng(3)
    points = rng.normal(size=(12, 4)) * [5.0, 2.0, 0.1, 0.05]
    centred = points - points.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    expected = centred @ vt[:2].T                         # PCA scores = classical MDS of Euclidean distances
    coords = principal_coordinates(squareform(pdist(points)))
    for j in range(2):
        sign = np.sign(coords[:, j] @ expected[:, j])
        np.testing.assert_allclose(coords[:, j], sign * expected[:, j], atol=1e-9)


def test_two_topics_sit_half_their_divergence_either_side_of_the_origin():
    topics = np.array([[0.7, 0.2, 0.1, 0.0], [0.1, 0.1, 0.4, 0.4]])
    d = jensenshannon(topics[0], topics[1]) ** 2
    coords = intertopic_coordinates(topics)
    np.testing.assert_allclose(np.sort(coords[:, 0]), [-d / 2, d / 2], rtol=1e-12)
    np.testing.assert_array_equal(coords[:, 1], 0.0)


def test_js_divergences_match_scipy_squared_jensen_shannon_distance():
    rng = np.random.default_rng(11)
    topics = rng.dirichlet(np.full(30, 0.3), size=6)
    topics[2, :10] = 0.0                                  # zeros: 0 log 0 = 0
    topics[2] /= topics[2].sum()
    expected = squareform(pdist(topics, lambda p, q: jensenshannon(p, q) ** 2))
    np.testing.assert_allclose(js_divergences(topics), expected, rtol=1e-10, atol=1e-15)


def test_js_divergences_blocks_give_the_same_matrix(monkeypatch):
    from topicscale import topic_map
    rng = np.random.default_rng(5)
    topics = rng.dirichlet(np.full(40, 0.5), size=7)
    whole = js_divergences(topics)
    monkeypatch.setattr(topic_map, "_BLOCK", 40 * 2)     # two rows a block
    np.testing.assert_allclose(js_divergences(topics), whole, rtol=1e-14)


def test_signs_are_fixed_and_topic_order_only_permutes_rows():
    rng = np.random.default_rng(1)
    topics = rng.dirichlet(np.full(50, 0.2), size=8)
    coords = intertopic_coordinates(topics)
    for j in range(2):
        assert coords[np.argmax(np.abs(coords[:, j])), j] > 0
    perm = rng.permutation(8)
    np.testing.assert_allclose(intertopic_coordinates(topics[perm]), coords[perm], atol=1e-12)


def test_one_topic_is_the_origin_and_bad_input_is_refused():
    np.testing.assert_array_equal(intertopic_coordinates(np.array([[0.5, 0.5]])), np.zeros((1, 2)))
    with pytest.raises(ValueError, match="non-negative"):
        intertopic_coordinates(np.array([[1.5, -0.5], [0.5, 0.5]]))
    with pytest.raises(ValueError, match="positive mass"):
        intertopic_coordinates(np.array([[0.0, 0.0], [0.5, 0.5]]))
