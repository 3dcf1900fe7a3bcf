"""`workbench actions`: the write actions agents proposed, waiting for a person. Nothing an
agent proposes is executed until someone approves it here."""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import TYPE_CHECKING

from workbench.cli import wording
from workbench.cli.shared import Verb, add_db
from workbench.errors import ConfigError

if TYPE_CHECKING:
    from workbench.cli.shared import Subcommands


def add(verbs: Subcommands) -> None:
    actions = verbs.add_parser(
        "actions",
        help="pending actions: what agents proposed, waiting for a person",
        description="List, show, approve or reject the write actions agents proposed during "
        "runs. Nothing an agent proposes is executed until someone approves it here.",
    )
    action_verbs = actions.add_subparsers(dest="action_verb", metavar="VERB", required=True)
    a_list = action_verbs.add_parser("list", help="list actions (default: pending)")
    a_list.add_argument(
        "--status",
        default="pending",
        choices=("pending", "executing", "executed", "failed", "rejected", "all"),
    )
    a_show = action_verbs.add_parser("show", help="one action, its payload and history")
    a_show.add_argument("action_id")
    a_ok = action_verbs.add_parser("approve", help="approve (and execute) a pending action")
    a_ok.add_argument("action_id")
    a_ok.add_argument("--by", required=True, help="who approves (recorded)")
    a_ok.add_argument(
        "--amend", metavar="JSON", help='fields to change first, e.g. \'{"to": "x@y.z"}\''
    )
    a_no = action_verbs.add_parser("reject", help="reject a pending action")
    a_no.add_argument("action_id")
    a_no.add_argument("--by", required=True, help="who rejects (recorded)")
    a_no.add_argument("--note", help="why")
    for parser_ in (a_list, a_show, a_ok, a_no):
        add_db(parser_)


def run(args: argparse.Namespace) -> int:
    return asyncio.run(_actions(args))


async def _actions(args: argparse.Namespace) -> int:
    from workbench.eval.store.database import Store
    from workbench.tools.demo import demo_executors
    from workbench.tools.pending import PendingActions

    read_only = args.action_verb in ("list", "show")
    with Store.open(args.db, read_only=read_only, snapshot=read_only) as store:
        pending = PendingActions(store.actions, demo_executors())
        if args.action_verb == "list":
            found = await pending.list(None if args.status == "all" else args.status)
            for a in found:
                print(wording.action_line(a))
            if not found:
                print(wording.nothing_line(f"{args.status} actions"))
            return 0
        if args.action_verb == "show":
            action = await pending.get(args.action_id)
        elif args.action_verb == "approve":
            try:
                amend = json.loads(args.amend) if args.amend else None
            except json.JSONDecodeError as exc:
                raise ConfigError(f"--amend is not JSON: {exc}", code="ACTION_INVALID") from None
            action = await pending.approve(args.action_id, args.by, amend)
        else:
            action = await pending.reject(args.action_id, args.by, args.note)
    print(json.dumps(action.to_dict(), ensure_ascii=False, indent=2, default=str))
    return 0 if action.status != "failed" else 1


VERB = Verb(add, run)
