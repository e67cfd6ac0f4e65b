"""The static screen of ``safe`` dry-run mode: pure and fast, no kernel.

Cells that write outside a file of their own (a database, a remote store, a deletion), talk to the
network or the shell, or wait for stdin must not be dry-run in ``safe`` mode (the jail would stop
them at once); ordinary cells must pass, or the dry run would be useless. So must cells that save a
file: the jail keeps what they write in the copy's memory, and the run goes on past the save.
"""

from __future__ import annotations

import pytest

from crane_lsp.analysis.parse import analyze
from crane_lsp.dryrun import screen

SCREENED = {
    # writes outside a file of its own
    "to_sql": ("df.to_sql('sales', con, if_exists='replace')", "writes outside its files"),
    "push_to_hub": ("model.push_to_hub('me/model')", "writes outside its files"),
    "writer by reference": ("push = model.push_to_hub\npush('me/model')", "writes outside its files"),
    "Path.unlink": ("Path('old.csv').unlink()", "writes outside its files"),
    "tf.io.write_file": ("tf.io.write_file('x.txt', data)", "saves"),
    "tf.io.gfile": ("with tf.io.gfile.GFile('x', 'w') as f:\n    f.write('a')", "saves"),
    "tf.saved_model": ("tf.saved_model.save(model, 'export_dir')", "saves"),
    "tf summary writer": ("writer = tf.summary.create_file_writer('logs')", "writes outside its files"),
    "checkpoint callback": (
        "model.fit(X, y, epochs=3, callbacks=[ModelCheckpoint('best.h5')])",
        "checkpoints",
    ),
    "checkpoint callback by name": ("model.fit(X, y, callbacks=[checkpoint_cb])", "checkpoints"),
    "os.remove": ("os.remove('old.csv')", "changes files"),
    # network
    "requests.get": ("r = requests.get('https://example.com/data.json')", "network"),
    "import requests": ("import requests", "network"),
    "urlretrieve": ("urllib.request.urlretrieve(url, 'data.zip')", "network"),
    "read_csv from a URL": ("df = pd.read_csv('https://example.com/a.csv')", "network"),
    "fetch_openml": ("X, y = fetch_openml('mnist_784', return_X_y=True)", "network"),
    "from_pretrained": ("model = AutoModel.from_pretrained('bert-base-uncased')", "network"),
    "load_dataset": ("ds = load_dataset('imdb')", "network"),
    "torchvision download": ("ds = datasets.MNIST('data', train=True, download=True)", "download"),
    "keras load_data": ("(x, y), _ = keras.datasets.mnist.load_data()", "network"),
    "torch.hub": ("m = torch.hub.load('pytorch/vision', 'resnet18')", "network"),
    "sqlite3": ("con = sqlite3.connect('data.db')", "network"),
    # shell
    "shell escape": ("!ls -la", "shell"),
    "shell capture": ("files = !ls data", "shell"),
    "shell inside %%time": ("%%time\nx = 1\n!rm -rf out", "shell"),
    "%pip": ("%pip install lightgbm", "%pip"),
    "%%bash": ("%%bash\nls", "%%bash"),
    "%%writefile": ("%%writefile script.py\nprint(1)", "%%writefile"),
    "%run": ("%run train.py", "%run"),
    "subprocess.run": ("subprocess.run(['ls'])", "program"),
    "from subprocess import": ("from subprocess import run\nrun(['ls'])", "subprocess"),
    "os.system": ("os.system('ls')", "program"),
    "shutil.copy": ("shutil.copy('a', 'b')", "program"),
    # stdin
    "input": ("name = input('Your name? ')", "stdin"),
    "getpass": ("import getpass\npw = getpass.getpass()", "stdin"),
    "sys.stdin": ("import sys\nline = sys.stdin.readline()", "stdin"),
    # cannot screen
    "exec": ("exec(code)", "cannot screen"),
}

PASSES = {
    # saves a file (kept in the copy's memory by the jail)
    "pandas to_csv": "df.to_csv('out.csv', index=False)",
    "pandas to_parquet": "df.groupby('a').sum().to_parquet(path)",
    "ExcelWriter": "with pd.ExcelWriter('a.xlsx') as w:\n    df.to_excel(w)",
    "plt.savefig": "plt.plot(x, y)\nplt.savefig('plot.png')",
    "fig.savefig chained": "sns.heatmap(corr).get_figure().savefig('corr.png')",
    "torch.save": "torch.save(model.state_dict(), 'model.pt')",
    "keras model.save": "model.save('model.keras')",
    "save_weights": "model.save_weights('w.h5')",
    "np.save": "np.save('arr.npy', arr)",
    "np.savetxt": "np.savetxt('arr.txt', arr)",
    "joblib.dump": "import joblib\njoblib.dump(model, 'model.pkl')",
    "pickle.dump": "with open('m.pkl', 'wb') as f:\n    pickle.dump(model, f)",
    "open for writing": "with open(path, 'w') as f:\n    f.write('x')",
    "open mode keyword": "f = open(path, mode='ab')",
    "open mode unknown": "f = open(path, mode)",
    "Path.open write": "with Path('a.txt').open('w') as f:\n    pass",
    "h5py write": "f = h5py.File('data.h5', 'w')",
    "gzip write": "with gzip.open('a.gz', 'wt') as f:\n    f.write(text)",
    "tarfile write": "tar = tarfile.open('a.tar.gz', 'w:gz')",
    "fsspec write": "f = fs.open('bucket/a.csv', mode='wb')",
    "Path.write_text": "Path('notes.txt').write_text('x')",
    "os.makedirs": "os.makedirs('out', exist_ok=True)",
    "writer by reference": "save = df.to_csv\nsave('a.csv')",
    "cv2.imwrite": "cv2.imwrite('a.png', img)",
    "%time around a writer": "%time df.to_csv('a.csv')",
    "groupby": "df.groupby('a').sum()",
    "open for reading": "with open(path) as f:\n    text = f.read()",
    "open rb": "f = open(path, 'rb')",
    "open r keyword": "f = open(path, mode='r', encoding='utf-8')",
    "Path.open read": "with Path('a.txt').open() as f:\n    text = f.read()",
    "h5py read": "f = h5py.File('data.h5', 'r')",
    "PIL Image.open literal": "img = Image.open('a.png').convert('RGB')",
    "PIL Image.open variable": "img = Image.open(path)",
    "gzip read": "with gzip.open('a.gz', 'rt') as f:\n    text = f.read()",
    "fit": "model.fit(X, y)",
    "keras fit with early stopping": "model.fit(X, y, callbacks=[EarlyStopping(patience=2)])",
    "read_csv local": "df = pd.read_csv('data.csv')",
    "np.load": "arr = np.load('arr.npy')",
    "torch.load": "state = torch.load('model.pt')",
    "df.replace": "df['a'] = df['a'].replace(0, np.nan)",
    "str.replace": "df['b'] = df['b'].str.replace(',', '')",
    "df.rename": "df = df.rename(columns={'A': 'a'})",
    "list.remove": "items.remove(3)",
    "platform.system": "print(platform.system())",
    "model.eval": "model.eval()",
    "json.dumps": "s = json.dumps(d)",
    "plt.show": "plt.plot([1, 2])\nplt.show()",
    "predict": "pred = model.predict(X_test)\naccuracy_score(y_test, pred)",
    "%time": "%time model.fit(X, y)",
    "%%time": "%%time\nmodel.fit(X, y)",
    "%matplotlib": "%matplotlib inline\nplt.plot([1])",
    "%load_ext": "%load_ext autoreload\n%autoreload 2",
    "help": "df?",
    "import pandas": "import pandas as pd\nimport numpy as np",
    "sklearn load_iris": "from sklearn.datasets import load_iris\nX, y = load_iris(return_X_y=True)",
}


@pytest.mark.parametrize("source,expected", list(SCREENED.values()), ids=list(SCREENED))
def test_side_effect_cells_are_screened_out(source: str, expected: str) -> None:
    verdict = screen(analyze(source))
    assert not verdict.safe, source
    assert expected in verdict.reason, verdict.reason


@pytest.mark.parametrize("source", list(PASSES.values()), ids=list(PASSES))
def test_ordinary_cells_pass(source: str) -> None:
    verdict = screen(analyze(source))
    assert verdict.safe, verdict.reason
    assert verdict.reason == ""


def test_reason_names_the_call() -> None:
    verdict = screen(analyze("x = 1\nresult.to_sql('out', con)"))
    assert verdict.reason == "writes outside its files: result.to_sql()"
