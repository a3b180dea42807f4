"""The version of cyrank, in one place: read by setuptools (``pyproject.toml``) and by ``cyrank.__version__``."""
__version__ = "0.1.0"
