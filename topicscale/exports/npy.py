"""Export as numpy: OUT.npy the K x V row-stochastic E[beta] (rows in the order `topics --all` lists
the topics), OUT.vocab.txt the vocabulary in column order, OUT.weights.tsv each row's topic number
and corpus weight."""
import numpy as np

from ..atomic import atomic_file, check_not_owned


def write_npy(model, output):
    """Write the three files; returns the summary `export --json` prints."""
    base = output[:-4]
    files = [output, base + ".vocab.txt", base + ".weights.tsv"]
    check_not_owned(*files)
    order = np.asarray(model.display_order(True), dtype=np.int64)
    weights = model.topic_weights()
    with atomic_file(output) as fh:
        np.save(fh, np.ascontiguousarray(model.expected_beta()[:, order].T))
    with atomic_file(base + ".vocab.txt", "w") as fh:
        fh.writelines(f"{w}\n" for w in model.vocab)
    with atomic_file(base + ".weights.tsv", "w") as fh:
        fh.write("topic\tweight\n")
        fh.writelines(f"{k}\t{weights[k]:.6g}\n" for k in order)
    return {"format": "npy", "output": output, "topics": len(order), "vocabulary": model.n_words,
            "files": files, "not_carried": []}
