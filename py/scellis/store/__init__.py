"""The content-addressed object store and the checkpoints kept in it.

Objects are addressed by the SHA-256 of their bytes (`objects`): a directory in CPython (`directory`),
IndexedDB in the page (`runtime.browser_store`, through app/src/store.js). A checkpoint (`checkpoint`) is
one object, a tensor file in the safetensors layout (`tensorfile`), resumed by its key or not at all.
"""

from scellis.store.checkpoint import Checkpoint, ResumeError, load, save
from scellis.store.directory import DirectoryStore
from scellis.store.objects import (
    BadKey,
    CorruptObject,
    MissingObject,
    Store,
    StoreError,
    StoreFull,
    Unreadable,
    check_key,
    key_of,
    settle,
)
from scellis.store.tensorfile import FormatError, Tensor, decode, encode

__all__ = [
    "BadKey",
    "Checkpoint",
    "CorruptObject",
    "DirectoryStore",
    "FormatError",
    "MissingObject",
    "ResumeError",
    "Store",
    "StoreError",
    "StoreFull",
    "Tensor",
    "Unreadable",
    "check_key",
    "decode",
    "encode",
    "key_of",
    "load",
    "save",
    "settle",
]
