"""Global steps, one file each: fold a minibatch's sufficient statistics into the model with a
step size (schedule.py) and count the step (schedule.advance). Imports nothing until a step is
used."""
