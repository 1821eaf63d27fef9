"""The tokenizer code of a superword tokenizer folder, for ``transformers``' ``AutoTokenizer``.

``superword.hf`` copies this file into every folder it writes (``save_pretrained``, and
``superword export --to hf`` of a superword model) as ``tokenization_superword.py``, and
``tokenizer_config.json`` names it in its ``auto_map``, the way custom tokenizers are
published on the Hugging Face Hub.  ``AutoTokenizer.from_pretrained(folder,
trust_remote_code=True)`` then imports it from the folder.  It holds no tokenizer code of its
own: the class is the installed package's ``superword.hf.SuperwordTokenizer`` (``pip install
'superword[hf]'``), so the ids are exactly superword's, and the tokenizer pickles into worker
processes like any object of the package.

Without ``trust_remote_code=True``, ``AutoTokenizer`` refuses the folder and names that flag,
unless ``superword.hf`` has been imported first (importing it registers the class with
``AutoTokenizer``, so the folder loads from the installed code without this file).
"""
from superword.hf import SuperwordTokenizer

__all__ = ["SuperwordTokenizer"]
