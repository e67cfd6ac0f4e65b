# ruff: noqa: E501  (notebook cell sources read best as one string per line)
"""Write the audit notebooks: code in the style of public Kaggle kernels and library tutorials.

Each notebook builds its own data (no downloads, no files outside its folder) and mostly runs clean;
a few cells crash on purpose, as real notebooks do. ``benchmarks/certainty_audit.py`` walks them.

    python3 benchmarks/audit_notebooks/make_notebooks.py [NAME ...]
"""

from __future__ import annotations

from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent

NOTEBOOKS: dict[str, list[str]] = {
    "titanic_cleaning": [
        "import numpy as np\nimport pandas as pd\nrng = np.random.default_rng(42)\nn = 300",
        "train = pd.DataFrame({\n    'PassengerId': np.arange(1, n + 1),\n    'Survived': rng.integers(0, 2, n),\n"
        "    'Pclass': rng.integers(1, 4, n),\n    'Sex': rng.choice(['male', 'female'], n),\n"
        "    'Age': np.where(rng.random(n) < 0.2, np.nan, rng.normal(30, 12, n).round()),\n"
        "    'Fare': rng.gamma(2, 15, n).round(2),\n    'Embarked': rng.choice(['S', 'C', 'Q', None], n),\n})\n"
        "train.head()",
        "train.info()\ntrain.describe()",
        "print(train.isnull().sum())\ntrain['Age'] = train['Age'].fillna(train['Age'].median())",
        "train['Embarked'] = train['Embarked'].fillna('S')\ntrain['Sex'] = train['Sex'].map({'male': 0, 'female': 1})",
        "for col in ['Pclass', 'Sex', 'Embarked']:\n    print(train.groupby(col)['Survived'].mean())",
        "train['FamilySize'] = 1\ntrain['Title'] = 'Mr'\ntrain = pd.get_dummies(train, columns=['Embarked'])\ntrain.shape",
        "features = ['Pclass', 'Sex', 'Age', 'Fare', 'FamilySize']\nX = train[features]\ny = train['Survived']\nX.shape, y.shape",
        "train['Cabin'].value_counts()",
    ],
    "housing_regression": [
        "import numpy as np\nimport pandas as pd\nfrom sklearn.model_selection import train_test_split\n"
        "from sklearn.linear_model import LinearRegression, Ridge\nfrom sklearn.metrics import mean_squared_error, r2_score",
        "rng = np.random.default_rng(0)\nhouses = pd.DataFrame(rng.normal(size=(500, 4)), columns=['rooms', 'age', 'dist', 'tax'])\n"
        "houses['price'] = 3 * houses['rooms'] - houses['dist'] + rng.normal(size=500)",
        "X = houses.drop(columns=['price'])\ny = houses['price']\n"
        "X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=1)",
        "lr = LinearRegression()\nlr.fit(X_train, y_train)\npred = lr.predict(X_test)\n"
        "print('RMSE', np.sqrt(mean_squared_error(y_test, pred)))\nprint('R2', r2_score(y_test, pred))",
        "coef = pd.Series(lr.coef_, index=X.columns).sort_values()\ncoef",
        "ridge = Ridge(alpha=1.0).fit(X_train, y_train)\nridge.score(X_test, y_test)",
        "new = X_test.drop(columns=['tax'])\nlr.predict(new)",
        "residuals = y_test - pred\nresiduals.describe()",
    ],
    "statsmodels_ols": [
        "import numpy as np\nimport pandas as pd\nimport statsmodels.api as sm\nimport statsmodels.formula.api as smf",
        "rng = np.random.default_rng(1)\ndata = pd.DataFrame({'x1': rng.normal(size=200), 'x2': rng.normal(size=200)})\n"
        "data['y'] = 1 + 2 * data['x1'] - data['x2'] + rng.normal(size=200)",
        "X = sm.add_constant(data[['x1', 'x2']])\nmodel = sm.OLS(data['y'], X)\nresults = model.fit()\nprint(results.summary())",
        "results.params\nresults.pvalues\nresults.rsquared",
        "pred = results.predict(X)\nresid = results.resid\nprint(resid.std(), results.bse)",
        "ols2 = smf.ols('y ~ x1 + x2', data=data).fit()\nols2.conf_int()",
        "from statsmodels.tsa.ar_model import AutoReg\nseries = pd.Series(rng.normal(size=120)).cumsum()\n"
        "ar = AutoReg(series, lags=3).fit()\nar.summary()\nar.params",
        "forecast = ar.predict(start=len(series), end=len(series) + 5)\nforecast",
    ],
    "numpy_records": [
        "import numpy as np",
        "people = np.array([('Ann', 31, 61.5), ('Bob', 45, 82.0), ('Cy', 27, 70.1)],\n"
        "                  dtype=[('name', 'U10'), ('age', 'i4'), ('weight', 'f8')])\n"
        "data_rec = people.view(np.recarray)\nprint(data_rec.age.mean())",
        "row = data_rec[0]\nprint(row.name, row.weight)\nolder = data_rec[data_rec.age > 30]\nolder.name",
        "people['age'].max(), people[['name', 'age']]",
        "m = np.arange(12).reshape(3, 4)\nprint(m.T @ m)\nnp.linalg.det(m[:, :3])",
        "inv = np.linalg.inv(np.eye(3) * 2)\ninv.sum(axis=0)",
        "people.age",
    ],
    "sklearn_pipeline": [
        "import numpy as np\nimport pandas as pd\nfrom sklearn.pipeline import Pipeline, make_pipeline\n"
        "from sklearn.preprocessing import StandardScaler, OneHotEncoder\nfrom sklearn.compose import ColumnTransformer\n"
        "from sklearn.ensemble import RandomForestClassifier\nfrom sklearn.model_selection import cross_val_score",
        "rng = np.random.default_rng(3)\ndf = pd.DataFrame({'num1': rng.normal(size=200), 'num2': rng.normal(size=200),\n"
        "                   'cat': rng.choice(['a', 'b', 'c'], 200)})\nlabels = (df['num1'] > 0).astype(int)",
        "pre = ColumnTransformer([('num', StandardScaler(), ['num1', 'num2']),\n"
        "                         ('cat', OneHotEncoder(handle_unknown='ignore'), ['cat'])])\n"
        "clf = Pipeline([('pre', pre), ('rf', RandomForestClassifier(n_estimators=20, random_state=0))])",
        "scores = cross_val_score(clf, df, labels, cv=3)\nprint(scores.mean())",
        "clf.fit(df, labels)\nclf.predict(df.head())",
        "importances = clf.named_steps['rf'].feature_importances_\nimportances.shape",
        "simple = make_pipeline(StandardScaler(), RandomForestClassifier(n_estimators=10))\n"
        "simple.fit(df[['num1', 'num2']], labels)\nsimple.score(df[['num1', 'num2']], labels)",
        "simple.predict(df[['num1']])",
    ],
    "sales_groupby": [
        "import pandas as pd\nimport numpy as np",
        "orders = pd.DataFrame({'order_id': range(1, 11), 'customer': list('abcabcabca'),\n"
        "                       'amount': [10.5, 20, 5, 7.5, 12, 30, 8, 9, 11, 14],\n"
        "                       'date': pd.date_range('2024-01-01', periods=10, freq='D')})\n"
        "customers = pd.DataFrame({'customer': ['a', 'b', 'c'], 'region': ['north', 'south', 'east']})",
        "merged = orders.merge(customers, on='customer', how='left')\nmerged.head()",
        "by_region = merged.groupby('region')['amount'].agg(['sum', 'mean', 'count'])\nby_region",
        "merged['month'] = merged['date'].dt.month\nmonthly = merged.pivot_table(index='month', columns='region', values='amount', aggfunc='sum')\nmonthly",
        "top = merged.sort_values('amount', ascending=False).head(3)\ntop[['order_id', 'amount']]",
        "merged['amount_k'] = merged['amount'] / 1000\nmerged.drop(columns=['amount_k']).shape",
        "merged.groupby('Region')['amount'].sum()",
    ],
    "torch_training": [
        "import numpy as np\nimport torch\nfrom torch import nn\ntorch.manual_seed(0)",
        "X = torch.randn(64, 8)\ny = (X[:, 0] > 0).long()\nmodel = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))",
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nloss_fn = nn.CrossEntropyLoss()\n"
        "for epoch in range(5):\n    opt.zero_grad()\n    loss = loss_fn(model(X), y)\n    loss.backward()\n    opt.step()\nprint(loss.item())",
        "with torch.no_grad():\n    logits = model(X)\nacc = (logits.argmax(dim=1) == y).float().mean()\nacc",
        "arr = X.numpy()\narr.shape, arr.dtype",
        "test = torch.randn(10, 7)\nwith torch.no_grad():\n    out = model(test)",
    ],
    "text_cleaning": [
        "import pandas as pd\nimport re",
        "reviews = pd.DataFrame({'text': ['Great product!!', 'bad', None, 'OK  fine', 'Loved it'],\n"
        "                        'stars': [5, 1, 3, 3, 5], 'zip': [2134, 10001, 501, 94103, 60601]})",
        "reviews['text'] = reviews['text'].fillna('')\nreviews['clean'] = reviews['text'].str.lower().str.replace(r'[^a-z ]', '', regex=True)",
        "reviews['n_words'] = reviews['clean'].str.split().str.len()\nreviews[['clean', 'n_words']]",
        "reviews['zip'] = reviews['zip'].astype(str).str.zfill(5)\nreviews['zip'].tolist()",
        "def tokens(s):\n    return re.findall(r'[a-z]+', s)\nreviews['tokens'] = reviews['clean'].apply(tokens)\nreviews['tokens'].head()",
        "summary = {'mean_stars': reviews['stars'].mean(), 'n': len(reviews)}\nprint(summary['mean_stars'])",
        "summary['median']",
    ],
    "plotting_eda": [
        "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\nimport numpy as np\nimport pandas as pd",
        "rng = np.random.default_rng(5)\nframe = pd.DataFrame({'a': rng.normal(size=100), 'b': rng.normal(size=100)})",
        "fig, ax = plt.subplots(1, 2, figsize=(8, 3))\nax[0].hist(frame['a'], bins=20)\nax[1].scatter(frame['a'], frame['b'])\nplt.close(fig)",
        "frame.plot(kind='box')\nplt.close('all')",
        "img = rng.random((8, 8))\nplt.imshow(img)\nplt.close('all')",
        "corr = frame.corr()\nplt.matshow(corr)\nplt.close('all')",
        "plt.plot(frame['a'].values, frame['b'].values[:50])",
    ],
    "user_functions": [
        "import numpy as np\nimport pandas as pd",
        "def add_features(df):\n    out = df.copy()\n    out['ratio'] = out['a'] / (out['b'].abs() + 1)\n    return out\n\n"
        "def summarize(df, col):\n    return df[col].describe()",
        "raw = pd.DataFrame({'a': np.arange(10.0), 'b': np.linspace(-1, 1, 10)})\nfeat = add_features(raw)\nsummarize(feat, 'ratio')",
        "results = []\nfor k in range(3):\n    results.append(feat['a'].sum() * k)\nresults",
        "total = 0\nfor col in ['a', 'b', 'ratio']:\n    total += feat[col].mean()\ntotal",
        "summarize(feat, 'missing')",
    ],
    "user_function_calls": [
        "import numpy as np\nimport pandas as pd\nfrom sklearn.linear_model import LinearRegression\nrng = np.random.default_rng(0)\ndf = pd.DataFrame({'a': rng.normal(size=40), 'b': rng.normal(size=40), 'c': rng.normal(size=40)})",
        "def prep(d):\n    out = d[['a', 'b']].copy()\n    out['ab'] = out['a'] * out['b']\n    return out",
        "X = prep(df)\nX.head()",
        "def add_flag(d, name='flag'):\n    d[name] = d['a'] > 0\n    return d\n\nadd_flag(df)\ndf['flag'].mean()",
        "def fit_score(model, X, y):\n    model.fit(X, y)\n    return model.score(X, y)\n\nscore = fit_score(LinearRegression(), X, df['c'])\nscore",
        "def feats(d):\n    return d[['a', 'b', 'ab']]\n\nm = LinearRegression().fit(feats(X), df['c'])\npred = m.predict(feats(X))\npred[:3]",
        "def pick(frame, col='a'):\n    return frame[col]\n\nv = pick(df, 'flag')\nw = pick(X, col='ab')\nv.sum() + w.sum()",
        "COLS = ['a', 'c']\ndef sel(d):\n    return d[COLS]\n\nsel(df).shape",
        "COLS = ['b']\nsel(df).columns.tolist()",
        "def depth(n):\n    return 0 if n == 0 else 1 + depth(n - 1)\n\ndepth(3)",
        "def prep(d):\n    return d[['a', 'c']]\n\nXa = prep(df)\nXa.shape",
        "def widen(d):\n    d = d.copy()\n    d['d'] = d['a'] + 1\n    return d\n\nwide = widen(df)\nwide[['a', 'd']].sum()",
        "def scale(d, k=2.0):\n    return d[['a', 'b']] * k\n\nscale(df, k=0.5).mean()",
        "def train(m, X):\n    m.fit(X, df['c'])\n    return m.predict(X)\n\np = train(LinearRegression(), X[['a', 'b']])\np.shape",
        "Xb = prep(df)\nm.predict(Xb)",
        "pick(df, 'zz')",
    ],
    "helpers_and_prints": [
        "import numpy as np\nimport pandas as pd\nfrom sklearn.linear_model import LinearRegression\nrng = np.random.default_rng(7)\nn = 120\n"
        "df = pd.DataFrame({'rooms': rng.integers(1, 6, n), 'age': rng.integers(0, 80, n), 'city': rng.choice(['A', 'B'], n)})\n"
        "df['price'] = 50 * df['rooms'] - df['age'] + rng.normal(size=n)",
        "def describe_frame(d):\n    print(d.shape)\n    print(d.dtypes)\n    return d.isnull().sum()\n\nmissing = describe_frame(df)\nmissing",
        "def count_rows(d):\n    return len(d)\n\nrows = count_rows(df)\ndf.groupby('city')['price'].mean()",
        "def add_log(d, col):\n    d['log_' + col] = np.log1p(d[col])\n    return d\n\nadd_log(df, 'price')\ndf['log_price'].describe()",
        "def add_ratio(d):\n    d['ratio'] = d['price'] / d['rooms']\n\nadd_ratio(df)\nprint(df['ratio'].max())",
        "X = df[['rooms', 'age']]\nprint(X.shape)\nprint(f'{len(X)} rows, {X.shape[1]} features')\nmodel = LinearRegression().fit(X, df['price'])\nmodel.score(X, df['price'])",
        "X_small = df[['rooms']]\nprint(X_small.shape)\nmodel.predict(X_small)",
        "for col in ['rooms', 'age']:\n    print(col, count_rows(df[[col]]))\ndf['rooms'].sum()",
        "total = count_rows(df) if len(df) else add_log(df, 'age')\ndf['log_age'].mean()",
        "rows = count_rows(df)\ndf['town'].value_counts()",
        "\n".join(f"v{i} = df['rooms'].iloc[{i % 5}] * {i}" for i in range(2100)) + "\nprint(df['nope'])",
    ],
}


def main() -> None:
    import sys

    wanted = set(sys.argv[1:])  # names to write (default: all; new cell ids make every rewrite a diff)
    for name, cells in NOTEBOOKS.items():
        if wanted and name not in wanted:
            continue
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(src) for src in cells]
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nbformat.write(nb, HERE / f"{name}.ipynb")
        print(f"wrote {name}.ipynb ({len(cells)} cells)")


if __name__ == "__main__":
    main()
