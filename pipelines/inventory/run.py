"""One ``auditlake inventory``: for each configured site, sign in with the personal access token the
environment holds (conf ``tableau.token_name_env`` / ``token_secret_env``, at ``tableau.server_url``),
read its state (``pipelines/inventory/fetch.py``), write one snapshot file per entity type at the hour
the run began, sign out. A site that refuses (a wrong token, no REST API access, a server out of reach)
is said in one line and the others go on; the command fails only when no site could be read."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pipelines.command.console import log as console_log
from pipelines.config.load import Config, secret
from pipelines.errors import AuditlakeError, ConfigError, ExternalError, one_line
from pipelines.inventory.fetch import read_site
from pipelines.inventory.files import write_snapshot
from pipelines.pull.run import landing_root


class InventoryError(ExternalError):
    """No configured site could be read (one line per site said before)."""


@dataclass
class SiteReport:
    site: str  # the content URL ('' = Default)
    site_luid: str | None = None
    rows: dict[str, int] = field(default_factory=dict)
    left_out: list[str] = field(default_factory=list)
    present: list[str] = field(default_factory=list)  # types whose file of this hour was there already
    refused: str | None = None  # why the site could not be read at all


@dataclass
class InventoryReport:
    hour: datetime
    sites: list[SiteReport] = field(default_factory=list)
    files: int = 0
    seconds: float = 0.0

    @property
    def refused(self) -> list[SiteReport]:
        return [s for s in self.sites if s.refused]


def _label(site: str) -> str:
    return f"'{site}'" if site else "'' (Default)"


def sites(cfg: Config) -> list[str]:
    """The content URLs to read: ``inventory.sites``, or ``tableau.site`` alone when that list is empty."""
    return list(cfg.settings.inventory.sites) or [cfg.settings.tableau.site]


def _refusal(url: str, exc) -> str:
    import tableauserverclient as TSC

    if isinstance(exc, TSC.FailedSignInError):
        return (
            f"Tableau refused the personal access token ({exc.code}: {exc.summary}): check "
            "tableau.token_name_env and tableau.token_secret_env"
        )
    code = str(getattr(exc, "code", ""))
    if code.startswith("403"):
        return f"no REST API access ({code}: {exc.summary}): the site or the token's user may not use the REST API"
    if isinstance(exc, TSC.ServerResponseError):
        return f"Tableau answered {code}: {exc.summary} ({one_line(exc.detail or '')})"
    return f"{url} did not answer as expected ({type(exc).__name__}: {one_line(exc)[:200]})"


def _read_one(cfg: Config, site: str, hour: datetime, root: Path, log: Callable[[str], None]) -> SiteReport:
    import requests
    import tableauserverclient as TSC
    from tableauserverclient.server.endpoint.exceptions import InternalServerError, NonXMLResponseError

    s, url = cfg.settings.inventory, cfg.settings.tableau.server_url
    report = SiteReport(site)
    auth = TSC.PersonalAccessTokenAuth(
        secret(cfg, "tableau.token_name_env"), secret(cfg, "tableau.token_secret_env"), site_id=site
    )
    server = TSC.Server(url, use_server_version=True, http_options={"timeout": s.timeout_seconds})
    try:
        server.auth.sign_in(auth)
        try:
            report.site_luid = server.site_id
            state = read_site(server, s.page_size, log=log)
        finally:
            server.auth.sign_out()
    except (
        TSC.FailedSignInError,
        TSC.ServerResponseError,
        requests.RequestException,
        NonXMLResponseError,
        InternalServerError,
    ) as exc:
        report.refused = _refusal(url, exc)
        log(f"inventory: site {_label(site)}: {report.refused}; the other sites go on")
        return report
    report.left_out = state.left_out
    for entity_type, rows in sorted(state.rows.items()):
        if write_snapshot(root, report.site_luid, hour, entity_type, rows):
            report.rows[entity_type] = len(rows)
        else:
            report.present.append(entity_type)
    log(
        f"inventory: site {_label(site)} ({report.site_luid}): "
        + ", ".join(f"{n} {t}" for t, n in report.rows.items())
        + (f"; {len(report.present)} types already taken this hour, kept" if report.present else "")
        + (f"; left out: {len(state.left_out)} (said above)" if state.left_out else "")
    )
    return report


def inventory(
    cfg: Config, dest: Path | None = None, now: datetime | None = None, log: Callable[[str], None] = console_log
) -> InventoryReport:
    started = time.monotonic()
    if not cfg.settings.tableau.server_url:
        raise ConfigError(
            "config key 'tableau.server_url' is empty: set it (AUDITLAKE__TABLEAU__SERVER_URL) to your "
            "Tableau Cloud pod or Server address"
        )
    root = landing_root(cfg, dest)
    hour = (now or datetime.now(UTC)).astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    report = InventoryReport(hour)
    for site in sites(cfg):
        one = _read_one(cfg, site, hour, root, log)
        report.sites.append(one)
        report.files += len(one.rows)
    report.seconds = time.monotonic() - started
    log(
        f"inventory: {len(report.sites) - len(report.refused)} of {len(report.sites)} sites read, "
        f"{report.files} snapshot files for {hour:%Y-%m-%d %H}:00 UTC in {root} ({report.seconds:.1f}s)"
    )
    if report.refused and len(report.refused) == len(report.sites):
        raise InventoryError(
            f"inventory: no site could be read ({len(report.refused)} refused: "
            + "; ".join(f"{_label(s.site)}: {s.refused}" for s in report.refused)
            + ")"
        )
    return report


def inventory_before_refresh(cfg: Config, log: Callable[[str], None] = console_log) -> InventoryReport | None:
    """``inventory.on_refresh``: an inventory before the layers, so bronze lands what it wrote; one that
    fails is said in one line and the refresh goes on."""
    try:
        return inventory(cfg, log=log)
    except AuditlakeError as exc:
        log(f"refresh: the inventory failed, the refresh goes on without it: {one_line(exc)}")
        return None
