"""Local steps, one file each: fit each document given the topics and return the minibatch's
sufficient statistics (base.py: the contract they share). Imports nothing until a step is used."""
