"""Small Java classes of this package, compiled at run time and called in one py4j call each.

Reading a Spark plan from Python costs a py4j round trip per method call on each node, and
every object handed back is a Python proxy whose release is another round trip. Where the
adapter does the same thing for every statement (reading the relations its plan names and
the sizes of its inputs, building a write's projection), a few lines of Java beside the
Python module do it in the JVM in one call. The source ships in the package; this module
compiles it with Janino, which Spark ships (0.2 s), keeps the class file under the user's
cache directory (``~/.cache/dbt-ducklake/<class>-<key>/``, the key naming the Spark version
and the source), and loads it from there in later processes (about 10 ms). Whoever calls
:func:`instance` keeps a Python fallback: ``None`` means the class could not be made (another
Spark's API, no Janino), and then the slow way still gives the same answer.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

from .expressions import java_class
from .user_cache import cache_directory

log = logging.getLogger("dbt.adapters.ducklake")

_instances: dict[tuple[int, str], Any] = {}  # (py4j gateway client, class) -> instance | None
_lock = threading.Lock()


def instance(spark: Any, source: Path, class_name: str) -> Any:
    """An instance of ``class_name`` (compiled from ``source``) in ``spark``'s JVM, made once
    per JVM; ``None`` if it cannot be made there."""
    client = spark.sparkContext._gateway._gateway_client  # noqa: SLF001 - py4j's client
    key = (id(client), class_name)
    if key in _instances:
        return _instances[key]
    with _lock:
        if key not in _instances:
            try:
                _instances[key] = _load(spark, source, class_name)
            except Exception:  # noqa: BLE001 - Janino or the cache: the caller's walk works
                log.debug("the class %s is not available; its work is done through py4j",
                          class_name, exc_info=True)
                _instances[key] = None
    return _instances[key]


def _load(spark: Any, source_path: Path, class_name: str) -> Any:
    """The instance from the cached class file, compiling and caching it first if need be."""
    source = source_path.read_text()
    directory = class_directory(source, spark.version, class_name)
    path = directory / f"{class_name}.class"
    loader = java_class(spark, "java.lang.Thread").currentThread().getContextClassLoader()
    if not path.is_file():
        compiler = java_class(spark, "org.codehaus.janino.SimpleCompiler")()
        compiler.setParentClassLoader(loader)
        compiler.cook(source)
        try:
            _store(path, bytes(compiler.getBytecodes().get(class_name)))
        except OSError:
            log.debug("cannot cache the class %s under %s", class_name, directory,
                      exc_info=True)
            return _new(spark, compiler.getClassLoader().loadClass(class_name))
    gateway = spark.sparkContext._gateway  # noqa: SLF001
    urls = gateway.new_array(java_class(spark, "java.net.URL"), 1)
    urls[0] = java_class(spark, "java.io.File")(str(directory) + os.sep).toURI().toURL()
    classes = java_class(spark, "java.net.URLClassLoader")(urls, loader)
    return _new(spark, classes.loadClass(class_name))


def _new(spark: Any, cls: Any) -> Any:
    gateway = spark.sparkContext._gateway  # noqa: SLF001
    no_types = gateway.new_array(java_class(spark, "java.lang.Class"), 0)
    no_args = gateway.new_array(java_class(spark, "java.lang.Object"), 0)
    return cls.getDeclaredConstructor(no_types).newInstance(no_args)


def class_directory(source: str, spark_version: str, class_name: str) -> Path:
    """Where the class compiled from ``source`` against this Spark version is cached."""
    key = hashlib.sha256(f"{spark_version}\n{source}".encode()).hexdigest()[:16]
    return cache_directory() / f"{class_name}-{key}"


def _store(path: Path, data: bytes) -> None:
    """Write the class file whole or not at all (another process may be loading it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
