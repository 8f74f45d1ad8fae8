"""SHIM: the smallest `torch` the staged Megatron-LM coordinator path runs on, on numpy.

What calls into it, and why it is enough:
- inference_request.compute_block_hashes_batched (coordinator prefix routing; request hashes
  when the engine context has prefix caching): torch.tensor(list, dtype=int64), slicing,
  .to(int64).cpu().numpy().tobytes(), .element_size().
- DynamicInferenceRequest.serialize: isinstance(v, torch.Tensor) and .cpu().tolist(), so a
  prompt_tokens tensor goes out as ("tensor", [...]) exactly as from a CUDA tensor.
- the engine's add_request: torch.tensor(ids, dtype=torch.int64, device=torch.cuda.current_device()).
- the engine's ABORT handling: `active_ids == request_id`, torch.where(...)[0].numel().
- the engine's START/STOP_CUDA_PROFILER: torch.cuda.cudart().cudaProfilerStart/Stop(), which
  here count calls (read by the harness's stats).
- HEAD's coordinator: isinstance(prompt, torch.Tensor); HEAD's _fail_submission: torch.empty(0).
- torch.distributed.is_initialized() -> False; get_rank() -> 0.
Nothing else exists: any other use raises AttributeError, visibly.
"""
import builtins as _b
import sys
import types

import numpy as _np

__stub__ = True
__version__ = "0.0.0+megatron-coordinator-harness-stub"


class dtype:
    def __init__(self, name, np_dtype, itemsize):
        self.name, self.np, self.itemsize = name, np_dtype, itemsize

    def __repr__(self):
        return f"torch.{self.name}"


int64 = long = dtype("int64", _np.int64, 8)
int32 = dtype("int32", _np.int32, 4)
float32 = dtype("float32", _np.float32, 4)
float64 = double = dtype("float64", _np.float64, 8)
bfloat16 = dtype("bfloat16", _np.float32, 2)
float16 = half = dtype("float16", _np.float16, 2)
uint8 = dtype("uint8", _np.uint8, 1)
_bool = dtype("bool", _np.bool_, 1)
_BY_NP = {d.np: d for d in (int64, int32, float64, float32, float16, _bool, uint8)}
# torch.bool / torch.int / torch.float, set at the very end of this module so that they do not
# shadow the builtins for the code above while it runs.


class device:
    def __init__(self, spec="cpu"):
        self.spec = str(spec)

    def __eq__(self, other):
        return isinstance(other, device) and other.spec == self.spec

    def __repr__(self):
        return f"device({self.spec!r})"


class Tensor:
    """A numpy array with the handful of torch.Tensor methods the staged code calls."""

    __slots__ = ("_a",)

    def __init__(self, array):
        self._a = array

    # shape / conversion
    def __len__(self):
        return len(self._a)

    def __iter__(self):
        return (Tensor(x) if isinstance(x, _np.ndarray) else x.item() for x in self._a)

    def __getitem__(self, key):
        r = self._a[key]
        return Tensor(r) if isinstance(r, _np.ndarray) else Tensor(_np.asarray(r))

    def __setitem__(self, key, value):
        self._a[key] = value._a if isinstance(value, Tensor) else value

    def __eq__(self, other):
        return Tensor(self._a == (other._a if isinstance(other, Tensor) else other))

    __hash__ = object.__hash__

    def __repr__(self):
        return f"tensor({self._a.tolist()!r})"

    @property
    def dtype(self):
        return _BY_NP.get(self._a.dtype.type, int64)

    @property
    def device(self):
        return device("cpu")

    @property
    def shape(self):
        return self._a.shape

    def to(self, dtype=None, *args, **kwargs):
        if isinstance(dtype, globals()["dtype"]):
            return Tensor(self._a.astype(dtype.np))
        return self

    def cpu(self):
        return self

    def cuda(self, *a, **k):
        return self

    def numpy(self):
        return self._a

    def tolist(self):
        return self._a.tolist()

    def item(self):
        return self._a.item()

    def numel(self):
        return _b.int(self._a.size)

    def element_size(self):
        return _b.int(self._a.itemsize)

    def long(self):
        return Tensor(self._a.astype(_np.int64))

    # core_v0.17..0.19's compute_block_hashes_batched (int64 arithmetic wraps as torch's does)
    def view(self, *shape):
        return Tensor(self._a.reshape(shape))

    def sum(self, dim=None):
        return Tensor(self._a.sum(axis=dim, dtype=self._a.dtype))

    def _o(self, other):
        return other._a if isinstance(other, Tensor) else other

    def __mul__(self, other):
        return Tensor(self._a * self._o(other))

    def __mod__(self, other):
        return Tensor(self._a % self._o(other))


def tensor(data, dtype=None, device=None, **kwargs):
    if isinstance(data, Tensor):
        data = data._a
    np_dtype = dtype.np if dtype is not None else None
    arr = _np.array(data, dtype=np_dtype)
    if dtype is None and arr.dtype == _np.float64:
        arr = arr.astype(_np.float32)  # torch's default float dtype
    return Tensor(arr)


def arange(n, device=None, dtype=None, **kwargs):
    return Tensor(_np.arange(n, dtype=(dtype.np if dtype else _np.int64)))


def pow(base, exponent):  # noqa: A001 - torch's name; int64 powers wrap as torch's do
    e = exponent._a if isinstance(exponent, Tensor) else exponent
    with _np.errstate(over="ignore"):
        return Tensor(_np.power(_np.int64(base), e.astype(_np.int64)))


def empty(*size, dtype=None, device=None, **kwargs):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    return Tensor(_np.empty(size, dtype=(dtype.np if dtype else _np.float32)))


def where(condition, *rest):
    if rest:
        raise NotImplementedError("torch stub: only the one-argument where()")
    return tuple(Tensor(ix) for ix in _np.nonzero(condition._a))


def are_deterministic_algorithms_enabled():
    return False


# --- torch.distributed ---------------------------------------------------------------------------
distributed = types.ModuleType("torch.distributed")
distributed.is_initialized = lambda: False
distributed.get_rank = lambda *a, **k: 0
distributed.get_world_size = lambda *a, **k: 1

# --- torch.cuda -------------------------------------------------------------------------------------
cuda = types.ModuleType("torch.cuda")
cuda.is_available = lambda: False
cuda.current_device = lambda: 0
PROFILER_CALLS = {"start": 0, "stop": 0}


class _CudaRt:
    def cudaProfilerStart(self):
        PROFILER_CALLS["start"] += 1

    def cudaProfilerStop(self):
        PROFILER_CALLS["stop"] += 1


cuda.cudart = lambda: _CudaRt()
nvtx = types.ModuleType("torch.cuda.nvtx")
nvtx.range_push = lambda msg: None
nvtx.range_pop = lambda: None
cuda.nvtx = nvtx

for _name, _mod in (("torch.distributed", distributed), ("torch.cuda", cuda), ("torch.cuda.nvtx", nvtx)):
    sys.modules[_name] = _mod

globals().update({"bool": _bool, "int": int32, "float": float32})
