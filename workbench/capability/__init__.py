"""What a model can do, observed rather than declared.

classify  reads one real response for what it proves (`Classification`)
decide    turns records into a plan (what to send) and a claim (what to say); TTLs, provenance
store     where records live (`CapabilityStore` protocol, `MemoryCapabilityStore`)
store_redis  the records shared through Redis across processes (`RedisCapabilityStore`), and
          Redis falling back to memory (`FailoverCapabilityStore`); imported on first use, so
          that `import workbench.capability` does not load redis
observer  classify → emit a `VerdictEvent` → store, keyed by a hash of the credential
vision    which models can see, before any request is sent
"""

from typing import TYPE_CHECKING

from workbench._lazy import lazy_names
from workbench.capability.classify import (
    Classification,
    classify_tool_attempt,
    classify_vision_attempt,
    says_cannot_see,
    says_images_unsupported,
    says_tools_unsupported,
)
from workbench.capability.decide import (
    DEFAULT_TTL_MS,
    CapabilityKind,
    CapabilityRecord,
    Provenance,
    ToolPlan,
    Verdict,
    claimable_verdict,
    current_verdict,
    is_stale,
    iso_ms,
    make_record,
    parse_iso_ms,
    plan_tool_attempt,
    scope_key,
    should_replace,
)
from workbench.capability.observer import CapabilityObserver
from workbench.capability.store import CapabilityStore, MemoryCapabilityStore
from workbench.capability.vision import (
    NoVisionLinkError,
    Sight,
    link_id,
    messages_carry_images,
    model_sees_images,
    require_seeing_links,
    seeing_links,
)

if TYPE_CHECKING:
    from workbench.capability.store_redis import FailoverCapabilityStore, RedisCapabilityStore

# public name → the module of this package that defines it (only the ones that load redis)
_HOMES: dict[str, str] = {
    "FailoverCapabilityStore": "store_redis",
    "RedisCapabilityStore": "store_redis",
}

__all__ = [
    "DEFAULT_TTL_MS",
    "CapabilityKind",
    "CapabilityObserver",
    "CapabilityRecord",
    "CapabilityStore",
    "Classification",
    "FailoverCapabilityStore",
    "MemoryCapabilityStore",
    "NoVisionLinkError",
    "Provenance",
    "RedisCapabilityStore",
    "Sight",
    "ToolPlan",
    "Verdict",
    "claimable_verdict",
    "classify_tool_attempt",
    "classify_vision_attempt",
    "current_verdict",
    "is_stale",
    "iso_ms",
    "link_id",
    "make_record",
    "messages_carry_images",
    "model_sees_images",
    "parse_iso_ms",
    "plan_tool_attempt",
    "require_seeing_links",
    "says_cannot_see",
    "says_images_unsupported",
    "says_tools_unsupported",
    "scope_key",
    "seeing_links",
    "should_replace",
]

__getattr__, __dir__ = lazy_names(__name__, _HOMES, globals())
