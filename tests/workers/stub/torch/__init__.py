"""A stand-in for torch in the worker tests (tests/worker_protocol.rs): just enough for the
built-in workers to import, answer the handshake and decline cases, on machines without torch
or a GPU. It runs no op."""
__version__ = "0.0-stub"
bfloat16, float16, float32, int32, int16 = "bf16", "fp16", "fp32", "i32", "i16"


class cuda:
    @staticmethod
    def is_available():
        return True

    @staticmethod
    def get_device_name(i=0):
        return "stub GPU"

    @staticmethod
    def get_device_capability(i=0):
        return (9, 0)
