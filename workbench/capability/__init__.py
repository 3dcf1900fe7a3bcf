"""What a model can do, observed rather than declared.

classify  reads one real response for what it proves (`Classification`)
decide    turns records into a plan (what to send) and a claim (what to say); TTLs, provenance
store     where records live (`CapabilityStore` protocol, `MemoryCapabilityStore`)
observer  classify → emit a `VerdictEvent` → store, keyed by a hash of the credential
vision    which models can see, before any request is sent
"""

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

__all__ = [
    "DEFAULT_TTL_MS",
    "CapabilityKind",
    "CapabilityObserver",
    "CapabilityRecord",
    "CapabilityStore",
    "Classification",
    "MemoryCapabilityStore",
    "NoVisionLinkError",
    "Provenance",
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
