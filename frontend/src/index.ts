// The explorer's anywidget module (bundled into deltaexplore/widgets/static/explorer.js).
import { render } from './app';

export default { render };
