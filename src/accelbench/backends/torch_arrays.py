"""torch's spelling of the array-namespace calls (backends/arrays.py), and torch.Generator on the device."""
from __future__ import annotations

from typing import Any

from accelbench.backends.arrays import ArrayNamespace, DeviceRandom


class TorchRandom(DeviceRandom):
    name = "torch.Generator"

    def __init__(self, ops, seed):
        super().__init__(ops, seed)
        self.torch = ops.xp
        self.where = ops.probe.device
        self.generator = self.torch.Generator(device=self.where)
        self.generator.manual_seed(self.seed)

    def normal(self, shape, dtype):
        return self.torch.randn(shape, generator=self.generator, dtype=self.ops.dtype(dtype), device=self.where)

    def uniform(self, shape, dtype):
        return self.torch.rand(shape, generator=self.generator, dtype=self.ops.dtype(dtype), device=self.where)

    def integers(self, high, shape):
        return self.torch.randint(0, high, shape, generator=self.generator, device=self.where)


class TorchArrays(ArrayNamespace):
    """torch spells creation with device=, joining as cat, and has its own median."""

    generator = TorchRandom

    def astype(self, array: Any, name: str) -> Any:
        return array.to(self.dtype(name))

    def placement(self) -> dict[str, Any]:
        return {"device": self.probe.device}

    def concat(self, arrays: list[Any], axis: int = 0) -> Any:
        return arrays[0] if len(arrays) == 1 else self.xp.cat(arrays, dim=axis)

    def take(self, values: Any, indices: Any) -> Any:
        # index_select is ~10x torch's fancy indexing on CPU
        return values.index_select(0, indices.reshape(-1)).reshape(indices.shape)

    def median_rows(self, array: Any) -> Any:
        return self.xp.median(array, dim=1).values  # torch's lower median: the median when odd
