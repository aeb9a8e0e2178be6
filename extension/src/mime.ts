/**
 * MIME renderer for `application/vnd.deltaexplore.table+json`: a static table summary that stays
 * readable in saved notebooks (where the explorer widget's live view is gone).
 */
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import { explorerOutputExtension } from './explorer_output';
import { renderSummary } from './summary';
import { ITableSummary, MIME_PLUGIN_ID, MIME_TYPE } from './tokens';

export class TableSummaryRenderer extends Widget implements IRenderMime.IRenderer {
  constructor() {
    super();
    this.addClass('dx-summary-output');
  }

  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    renderSummary(this.node, model.data[MIME_TYPE] as unknown as ITableSummary);
    return Promise.resolve();
  }
}

export const rendererFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [MIME_TYPE],
  createRenderer: () => new TableSummaryRenderer()
};

const extension: IRenderMime.IExtension = {
  id: MIME_PLUGIN_ID,
  rendererFactory,
  // before text/html (rank 50), after the widget view (rank 0): a live kernel shows the explorer
  rank: 40,
  dataType: 'json'
};

// the table summary, and the explorer's saved summary (explorer_output.ts)
export default [extension, explorerOutputExtension];
