"""Settings: built-in defaults < ~/.foundry-mcp.toml < ./foundry-mcp.toml < environment.

``./foundry-mcp.toml`` is replaced by the file named in ``FOUNDRY_MCP_CONFIG`` when that is set.
Every key is validated; an invalid file or value raises ``ConfigError`` naming the file (or the
environment variable), the key and the fix. Nothing invalid is silently dropped.

The user's own file, the environment and a file named in ``FOUNDRY_MCP_CONFIG`` are trusted. A
``./foundry-mcp.toml`` in the working directory usually comes with a cloned repository: until
the user trusts it (``foundry-mcp trust``, see :mod:`foundry_mcp.trust`) its values that would
delete, run, spend, move, read or send more are ignored and named in
``Settings.untrusted.ignored_keys``; those whose effect only the code using them can judge (the
search providers, model windows) are set aside in ``Settings.narrowing`` and apply only where
they narrow; every other value applies. Relative paths in a file are
taken relative to the folder of that file.

The modules: ``settings`` (the models, their bounds and defaults), ``effects`` (what each key
can do, and so what an untrusted file may set), ``files`` (one file read into a layer),
``untrusted`` (an untrusted file's values sifted by those rules), ``loading`` (the layers
merged, the environment, and errors that name where a bad key came from).
"""

from foundry_mcp.config.loading import (
    CONFIG_ENV,
    PROJECT_CONFIG,
    PROVIDER_ENV,
    RESEARCH_ENV,
    TOKENS_ENV,
    load_settings,
)
from foundry_mcp.config.provider_settings import (
    DEFAULT_MODELS,
    KNOWN_PROVIDER_KINDS,
    MCP_PREFIX,
    PriceSettings,
    ProviderKind,
    ProviderSettings,
)
from foundry_mcp.config.research_settings import (
    LIMIT_BOUNDS,
    MAX_QUERY_CHARS,
    MAX_WAIT_SECONDS,
    WHOLE_PAGES,
    FetchSettings,
    LocalDocumentsSettings,
    ResearchSettings,
    check_reading_budget,
)
from foundry_mcp.config.server_settings import (
    ServerSettings,
    ServerTokenSettings,
)
from foundry_mcp.config.settings import (
    LoggingSettings,
    ProjectNarrowing,
    Settings,
    UntrustedProjectConfig,
)
from foundry_mcp.config.untrusted import protected_keys_in

__all__ = [
    "CONFIG_ENV",
    "DEFAULT_MODELS",
    "KNOWN_PROVIDER_KINDS",
    "LIMIT_BOUNDS",
    "MAX_QUERY_CHARS",
    "MAX_WAIT_SECONDS",
    "MCP_PREFIX",
    "PROJECT_CONFIG",
    "PROVIDER_ENV",
    "RESEARCH_ENV",
    "TOKENS_ENV",
    "WHOLE_PAGES",
    "FetchSettings",
    "LocalDocumentsSettings",
    "LoggingSettings",
    "PriceSettings",
    "ProjectNarrowing",
    "ProviderKind",
    "ProviderSettings",
    "ResearchSettings",
    "ServerSettings",
    "ServerTokenSettings",
    "Settings",
    "UntrustedProjectConfig",
    "check_reading_budget",
    "load_settings",
    "protected_keys_in",
]
