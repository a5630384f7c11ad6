"""The package's version, in a module of its own: every layer may read it without importing the
package root's lazy entry points (which import the library)."""

__version__ = "0.2.0"
