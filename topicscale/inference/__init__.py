"""Inference: local_steps/ (per document, given the topics) and global_steps/ (fold the
statistics into the model), paired by registry.MATRIX; schedule.py (step sizes and the step
count); bbvi.py (the black-box VI engine)."""
