/** Stand-in for `@vscode/python-extension`: the active environment is whatever the test sets. */

export const pythonState: { executable: string | undefined } = { executable: undefined };

export const PythonExtension = {
  api: async () => ({
    environments: {
      getActiveEnvironmentPath: () => ({ id: 'test', path: pythonState.executable ?? '' }),
      resolveEnvironment: async () =>
        pythonState.executable ? { executable: { uri: { fsPath: pythonState.executable } } } : undefined,
      onDidChangeActiveEnvironmentPath: () => ({ dispose: () => undefined }),
    },
  }),
};
