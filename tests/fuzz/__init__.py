"""A mutation fuzzer for superword's readers: ``python -m tests.fuzz --minutes N``.

Every reader of a file that people download (v2 models, minbpe ``.model``, ``.tiktoken``
ranks, ``tokenizer.json``, count files, provenance sidecars) gets mutated copies of a valid
file; what loads is then encoded and decoded (the round trip must give the text back).  Each
case runs in a worker process under an address-space limit; a case ends in one of:

* ``ok`` (loaded, round trip exact) or ``refused`` (``ValueError`` / ``OSError``, the
  reader's answer to a bad file);
* ``round-trip``: loaded, but ``decode(encode(text))`` is not the text;
* ``crash``: another exception, or the worker killed by a signal (an abort from Rust, a
  segfault);
* ``hang``: no answer within the time limit;
* ``memory``: ``MemoryError``, or the worker killed while the limit was in force.

The harness prints a table of cases per format and class, and the first inputs of each bad
class are written to ``--keep`` (a folder) to be tried by hand.
"""
