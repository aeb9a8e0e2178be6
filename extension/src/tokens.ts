/**
 * Identifiers shared by the deltaexplore JupyterLab plugins.
 *
 * The extension talks to Python through the MIME type below (a table summary that
 * `deltaexplore` puts in every table's display bundle), the server extension that says which
 * folders are Delta tables (`deltaexplore/labserver.py`), and the kernel of each explorer tab
 * (`deltaexplore.magics.lab.open_explorer(location)`).
 */

/** MIME type of a Delta table summary (see `deltaexplore.widgets.display.summary_json`). */
export const MIME_TYPE = 'application/vnd.deltaexplore.table+json';

/** MIME type of an explorer's saved summary (see `deltaexplore.widgets.fallback`). */
export const EXPLORER_MIME_TYPE = 'application/vnd.deltaexplore.explorer+json';

/** Command ids; menus and context menus for them are declared in `schema/plugin.json`. */
export namespace CommandIDs {
  export const exploreTable = 'deltaexplore:explore-table';
  export const copyPath = 'deltaexplore:copy-path';
  export const copySnippet = 'deltaexplore:copy-pyspark-snippet';
}

/** Plugin ids. */
export const EXPLORE_PLUGIN_ID = 'deltaexplore-jupyterlab:plugin';
export const MIME_PLUGIN_ID = 'deltaexplore-jupyterlab:mime';
export const EXPLORER_PLUGIN_ID = 'deltaexplore-jupyterlab:explorer-output';

/** The summary `deltaexplore` sends with the MIME type. */
export interface ITableSummary {
  uri: string;
  version: number;
  timestamp: string;
  protocol: { reader: number; writer: number };
  name: string | null;
  partition_columns: string[];
  columns: { name: string; type: string }[];
  num_files: number;
  size_bytes: number;
}
