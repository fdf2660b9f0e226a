"""Evidence that is not speed: paper reproductions, golden checks against the authors' programs, the
side-information benefit panel, the parameter matrix and the claim ledger (``make reproduce``).

Each script writes ``reproduce/results/<name>.md`` (and the JSON the ledger reads); ``claims.py`` builds
``reproduce/results/CLAIMS.md`` from them. Protocols that a test also asserts live in the test helpers
(``tests/_*.py``) and are imported from there: nothing under ``tests/`` or ``ppclust/`` imports this package.
"""
