"""`python -m rllm_sweeps ARGS`: the training app, as `python train.py ARGS` (rllm_sweeps/train.py)."""

import sys

from rllm_sweeps.train import module_main

if __name__ == "__main__":
    module_main(sys.argv[1:])
