"""The package's version, in a module of its own: every layer may read it without importing the
package root's lazy entry points (which import the library)."""

# Between releases, the next release's development version (PEP 440): a checkout never says
# it is the release it came after (CHANGELOG.md, tests/test_cli.py).
__version__ = "0.3.0.dev0"
