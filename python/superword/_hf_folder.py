"""What a superword tokenizer folder for ``transformers`` holds beyond the stock files.

Shared by :mod:`superword.hf` (``SuperwordTokenizer.save_pretrained``) and
``superword._export.save_hf`` (``superword export --to hf``), which must work without
``transformers`` installed: nothing here imports it.

A folder gets, next to ``tokenizer_config.json``:

* ``superword.model``: the model file (the exact encoder's input);
* ``tokenization_superword.py``: the code file that ``auto_map`` names (the text of
  ``superword/_hf_remote.py``; it imports the installed ``superword``);

and ``tokenizer_config.json`` gets ``tokenizer_class: "SuperwordTokenizer"``, the ``auto_map``
and ``superword_format``, the version of this layout.  A reader refuses a folder of a later
format, naming its ``tokenizer_config.json``, rather than guess at it.
"""
from __future__ import annotations

import json
import os
from importlib import resources
from typing import Any

from ._version import __version__

#: The model file of a folder (``SuperwordTokenizer.vocab_files_names``).
MODEL_FILE = "superword.model"
#: The code file ``auto_map`` names; its text is :func:`code_text`.
CODE_FILE = "tokenization_superword.py"
#: ``tokenizer_config.json``'s ``auto_map``: AutoTokenizer's (slow, fast) class references.
AUTO_MAP = {"AutoTokenizer": [CODE_FILE.removesuffix(".py") + ".SuperwordTokenizer", None]}
#: The layout described above.  Folders without the key (written before it existed) hold the
#: same files and read as format 1.
FORMAT = 1
FORMAT_KEY = "superword_format"


def config_entries() -> dict[str, Any]:
    """The keys a folder's ``tokenizer_config.json`` carries for the exact path."""
    return {"tokenizer_class": "SuperwordTokenizer", "auto_map": AUTO_MAP, FORMAT_KEY: FORMAT}


def code_text() -> str:
    """The text of the code file (``superword/_hf_remote.py`` as installed)."""
    return resources.files("superword").joinpath("_hf_remote.py").read_text(encoding="utf-8")


def check_format(value: Any, where: str) -> None:
    """Refuse a folder layout this version does not know (``where`` names the file)."""
    if value is None or (type(value) is int and value == FORMAT):
        return
    if type(value) is int and value > FORMAT:
        raise ValueError(f"{where}: {FORMAT_KEY} is {value}: this folder was written by a later superword; "
                         f"superword {__version__} reads format {FORMAT} (upgrade superword to load it)")
    raise ValueError(f"{where}: {FORMAT_KEY} must be the integer {FORMAT}, got {value!r}")


def check_config_file(path: str | os.PathLike[str]) -> None:
    """:func:`check_format` on a ``tokenizer_config.json``; a file that is not JSON is named."""
    name = os.fspath(path)
    try:
        with open(name, encoding="utf-8") as f:
            config = json.load(f)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{name}: not a JSON tokenizer config ({exc})") from None
    if not isinstance(config, dict):
        raise ValueError(f"{name}: not a JSON object")
    check_format(config.get(FORMAT_KEY), name)
