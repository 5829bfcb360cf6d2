"""The reference study's Findings, written from a results dir's CSVs: ``document`` puts the
sections in reading order (``python -m reference.findings DIR``), ``base/`` holds what every
section stands on, ``speed/``, ``host/`` and ``changes/`` the sections, ``summary`` the README's
summary. Importing this package imports none of them."""
