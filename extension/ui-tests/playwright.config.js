/**
 * Galata configuration: a real JupyterLab (jupyter_server_test_config.py) and Debian's chromium.
 * No browser is downloaded: DELTAEXPLORE_CHROMIUM (default /usr/bin/chromium) is launched.
 */
const baseConfig = require('@jupyterlab/galata/lib/playwright-config');

const port = process.env.DELTAEXPLORE_UI_PORT || '8899';

module.exports = {
  ...baseConfig,
  reporter: [['list']],
  workers: 1,
  retries: 0,
  timeout: 120000,
  use: {
    ...baseConfig.use,
    baseURL: `http://127.0.0.1:${port}`,
    video: 'off',
    trace: 'off',
    launchOptions: {
      executablePath: process.env.DELTAEXPLORE_CHROMIUM || '/usr/bin/chromium',
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--no-first-run',
        '--disable-sync',
        '--disable-dev-shm-usage'
      ]
    }
  },
  webServer: {
    command: `${process.env.JUPYTER || 'jupyter'} lab --config jupyter_server_test_config.py`,
    url: `http://127.0.0.1:${port}/lab`,
    timeout: 120000,
    reuseExistingServer: false
  }
};
