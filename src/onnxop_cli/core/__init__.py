"""The core: tensors and byte sources, index maps (views), input files, applying one node, batches, signals."""
