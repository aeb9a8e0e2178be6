"""A Jupyter server extension for the JupyterLab file browser: which folders are Delta tables.

`GET /deltaexplore/tables?path=DIR` (authenticated, like the contents API) answers for one
folder of the server's contents: whether DIR itself is a Delta table and which of its
subfolders are (a folder with a `_delta_log/` folder), with each table's location on the
server (the path to give `open_table`, Spark or a colleague). One request per folder the file
browser shows, whatever the number of subfolders; only `_delta_log` is looked up, nothing is
read from the tables. Hidden folders are answered like the contents manager answers them.

Enabled by `jupyter_server_config.d/deltaexplore.json` (installed with the package) or
`--ServerApp.jpserver_extensions='{"deltaexplore.labserver": True}'`. Loaded, it puts its route in
the page config of JupyterLab and Notebook 7 (`deltaexploreTables`): the lab extension asks only
a server that has it (no 404 for every folder where it is off). Imports jupyter_server only when
the server loads it.
"""

from __future__ import annotations

import inspect
import json
from typing import Any

__all__ = ["delta_tables_in", "table_location"]

ROUTE = "/deltaexplore/tables"
#: the page config option that tells the lab extension the route (relative to the base URL)
PAGE_CONFIG_OPTION = "deltaexploreTables"


def _join(*parts: str) -> str:
    return "/".join(p.strip("/") for p in parts if p.strip("/"))


def table_location(contents_manager: Any, path: str) -> str:
    """Where the table at contents path `path` is on the server (an absolute OS path for the
    file-based contents managers, else the contents path)."""
    get_os_path = getattr(contents_manager, "_get_os_path", None)
    if callable(get_os_path):
        try:
            return str(get_os_path(path))
        except Exception:  # noqa: BLE001 - a manager without OS paths: its own path
            return path
    return path


def delta_tables_in(contents_manager: Any, path: str) -> dict[str, Any]:
    """`{"path", "is_table", "location", "tables": [{"name", "path", "location"}]}` for the
    contents folder `path` (tables: its subfolders holding a `_delta_log/` folder)."""
    path = path.strip("/")
    model = contents_manager.get(path, content=True, type="directory")
    tables = []
    for item in model.get("content") or []:
        if item.get("type") != "directory":
            continue
        child = item["path"]
        if contents_manager.dir_exists(_join(child, "_delta_log")):
            tables.append({"name": item["name"], "path": child, "location": table_location(contents_manager, child)})
    is_table = contents_manager.dir_exists(_join(path, "_delta_log"))
    return {
        "path": path,
        "is_table": bool(is_table),
        "location": table_location(contents_manager, path) if is_table else None,
        "tables": tables,
    }


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "deltaexplore.labserver"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    from jupyter_server.base.handlers import APIHandler
    from jupyter_server.utils import url_path_join
    from tornado import web

    class TablesHandler(APIHandler):  # type: ignore[misc]
        @web.authenticated
        async def get(self) -> None:
            path = self.get_query_argument("path", "")
            cm = self.contents_manager
            try:
                exists = await _maybe_await(cm.dir_exists(path.strip("/")))
            except Exception:  # noqa: BLE001 - a path the manager refuses is a missing folder
                exists = False
            if not exists:
                raise web.HTTPError(404, f"no folder {path!r}")
            self.finish(json.dumps(await _answer(cm, path)))

    web_app = serverapp.web_app
    route = url_path_join(web_app.settings["base_url"], ROUTE.lstrip("/"))
    web_app.add_handlers(".*$", [(route, TablesHandler)])
    # JupyterLab's and Notebook 7's page handlers start their page config from this dict
    web_app.settings.setdefault("page_config_data", {})[PAGE_CONFIG_OPTION] = ROUTE.lstrip("/")
    serverapp.log.info("deltaexplore: Delta table folders at %s", route)


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


async def _answer(cm: Any, path: str) -> dict[str, Any]:
    """`delta_tables_in` for sync and async contents managers."""
    if not _is_async(cm):
        return delta_tables_in(cm, path)
    path = path.strip("/")
    model = await cm.get(path, content=True, type="directory")
    tables = []
    for item in model.get("content") or []:
        if item.get("type") == "directory" and await cm.dir_exists(_join(item["path"], "_delta_log")):
            tables.append({"name": item["name"], "path": item["path"], "location": table_location(cm, item["path"])})
    is_table = bool(await cm.dir_exists(_join(path, "_delta_log")))
    return {"path": path, "is_table": is_table, "location": table_location(cm, path) if is_table else None, "tables": tables}


def _is_async(cm: Any) -> bool:
    return inspect.iscoroutinefunction(getattr(cm, "get", None))
