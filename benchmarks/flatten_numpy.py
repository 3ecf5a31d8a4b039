"""numpy only: load, reshape as ONNX Flatten(axis) does, save. The baseline
onnxop is compared with (benchmarks/whole_process.py).

    python benchmarks/flatten_numpy.py IN.npy OUT.npy [AXIS]
"""

import math
import sys

import numpy as np


def main(src: str, dst: str, axis: int = 1) -> None:
    a = np.load(src)
    shape = (math.prod(a.shape[:axis]), math.prod(a.shape[axis:]))
    np.save(dst, a.reshape(shape))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], *(int(x) for x in sys.argv[3:4]))
