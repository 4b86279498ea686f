"""Stand-in for fla.ops.nsa.parallel (tests only): the names the fla worker looks up, and no
FlashAttention 2 (so the sliding-window branch is unavailable, as fla itself sets it)."""
flash_attn_func = None


class ParallelNSAFunction:
    pass


def parallel_nsa(*args, **kwargs):
    raise NotImplementedError("stub")
