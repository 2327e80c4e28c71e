"""python -m topicscale (guarded: dask's spawned worker processes import the main module)."""
from .cli import main

if __name__ == "__main__":
    main()
