import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { jupyterRuntimeDir } from '../src/pickers';

describe('pickers', () => {
  it("finds Jupyter's runtime folder as jupyter_core does", () => {
    assert.equal(jupyterRuntimeDir({ JUPYTER_RUNTIME_DIR: '/r' }, 'linux', '/home/a'), '/r');
    assert.equal(jupyterRuntimeDir({ JUPYTER_DATA_DIR: '/d' }, 'linux', '/home/a'), '/d/runtime');
    assert.equal(jupyterRuntimeDir({}, 'linux', '/home/a'), '/home/a/.local/share/jupyter/runtime');
    assert.equal(jupyterRuntimeDir({ XDG_DATA_HOME: '/x' }, 'linux', '/home/a'), '/x/jupyter/runtime');
    assert.equal(jupyterRuntimeDir({}, 'darwin', '/Users/a'), '/Users/a/Library/Jupyter/runtime');
    assert.equal(jupyterRuntimeDir({ APPDATA: 'C:\\Users\\a\\AppData\\Roaming' }, 'win32', 'C:\\Users\\a'), 'C:\\Users\\a\\AppData\\Roaming\\jupyter\\runtime');
  });
});
