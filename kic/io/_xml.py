"""What the file formats share: safe reading, numbers and names in XML, rigid frames.

Reading refuses documents that declare entities: URDF and MJCF need none, and
entity declarations are how hostile XML attacks a parser (exponential expansion,
"billion laughs"; external entities reading local files).
"""
from __future__ import annotations

import functools
import gc
import os
import re
import xml.etree.ElementTree as ET

import numpy as np

from .._array import homogeneous
from ..errors import ModelError

__all__ = ["RepairWarning", "without_gc", "read_xml", "format_number", "format_vector", "xml_escape",
           "rigid_inverse"]


class RepairWarning(UserWarning):
    """A file was loaded as it states, with defects kic lists (unphysical inertias,
    dropped couplings); ``strict=True`` refuses such files instead."""


def without_gc(load):
    """Run a loader with Python's cyclic garbage collector paused.

    A load allocates thousands of small objects (elements, floats, arrays) that
    form no reference cycles, and every few hundred allocations the collector
    would walk the young objects and, now and then, every object of the process
    (numpy, scipy, networkx...): more time than the load itself in a large
    process.  Reference counting still frees everything as usual; the
    collector's previous state is restored afterwards, also on error.
    """
    @functools.wraps(load)
    def run(*args, **kwargs):
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return load(*args, **kwargs)
        finally:
            if was_enabled:
                gc.enable()
    return run


_BOMS = ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\x00\x00\xfe\xff", "utf-32"),
         (b"\xff\xfe\x00\x00", "utf-32"), (b"\xfe\xff", "utf-16"), (b"\xff\xfe", "utf-16"),
         (b"\x00<\x00?", "utf-16-be"), (b"<\x00?\x00", "utf-16-le"))
_DECLARED = re.compile(rb"<\?xml[^>]*?\sencoding\s*=\s*[\"']([A-Za-z][A-Za-z0-9._-]*)[\"']")


def _decode(data: bytes, what: str) -> str:
    """The text of an XML document given as bytes, in the encoding its byte-order mark or
    XML declaration states (UTF-8 by default, as XML says)."""
    encoding = next((enc for bom, enc in _BOMS if data.startswith(bom)), None)
    if encoding is None:
        declared = _DECLARED.match(data, 0, 200) if data.startswith(b"<?xml") else None
        encoding = declared.group(1).decode("ascii") if declared else "utf-8"
    try:
        return data.decode(encoding)
    except LookupError:
        raise ModelError(f"{what} declares encoding {encoding!r}, which Python does not "
                         "know") from None
    except UnicodeDecodeError as exc:
        raise ModelError(f"{what} is not valid {encoding} text (its declared or default "
                         f"encoding): byte {exc.start} ({exc.object[exc.start:exc.end]!r}) "
                         f"{exc.reason}") from None


def _read_bytes(path: str) -> bytes:
    """A file's bytes by the operating system's calls (a third of the cost of ``open``,
    which builds buffered file objects: a small robot's file is read in microseconds)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        chunks = []
        while chunk := os.read(fd, size + 1 if not chunks else 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_xml(source, fmt: str, root_tag: str) -> ET.Element:
    """The root element of XML given as text, bytes or a file path.

    Bytes and files are decoded as their byte-order mark or XML declaration
    (``<?xml version="1.0" encoding="ISO-8859-1"?>``) says, UTF-8 by default.
    Raises :class:`kic.ModelError` for an unreadable file, bytes not in their
    encoding, XML that is not well-formed, a document that declares entities,
    or a root element other than ``root_tag``; ``fmt`` ("URDF", "MJCF") names
    the format in messages, and the file's path is named when there is one.
    """
    where = ""
    if isinstance(source, bytes):
        text = _decode(source, f"{fmt} bytes")
    elif isinstance(source, (str, os.PathLike)):
        s = os.fspath(source)
        if s.lstrip().startswith("<"):
            text = s
        else:
            where = f" (file {s!r})"
            try:
                data = _read_bytes(s)
            except OSError as exc:
                raise ModelError(f"cannot read {fmt} file {s!r}: {exc.strerror}") from None
            text = _decode(data, f"{fmt} file {s!r}")
    else:
        raise ModelError(f"a {fmt} is given as XML text or a file path, got "
                         f"{type(source).__name__}")
    if "<!ENTITY" in text:
        raise ModelError(f"{fmt}{where} declares XML entities (<!ENTITY>): refused, a robot "
                         "description needs none and they are the means of hostile XML "
                         "(entity expansion, external files)")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise ModelError(f"{fmt}{where} is not well-formed XML: {exc}") from None
    if root.tag != root_tag:
        raise ModelError(f"{fmt}{where} root element must be <{root_tag}>, got <{root.tag}>")
    return root


def format_number(x: float) -> str:
    """A float in full precision for XML (``repr``: reads back exactly)."""
    x = float(x)
    return "0" if x == 0 else repr(x)


def format_vector(v) -> str:
    """Numbers separated by spaces, each as :func:`format_number`."""
    return " ".join(format_number(x) for x in v)


def xml_escape(s: str) -> str:
    """A name escaped for an XML attribute value."""
    return (str(s).replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")
            .replace(">", "&gt;"))


def rigid_inverse(T: np.ndarray) -> np.ndarray:
    """Inverse of a 4x4 rigid transform, ``[R^T, -R^T p]``."""
    R, p = T[:3, :3], T[:3, 3]
    return homogeneous(R.T, -R.T @ p)
