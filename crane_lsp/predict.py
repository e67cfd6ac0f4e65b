"""The pipeline every front door uses: parse the cell, probe the kernel, run the checks, then the
dry run and the LLM. One ``Prediction`` comes out; nothing here knows which door it came through.

INTERFACE (stable):
    pipeline = Pipeline(settings, link=KernelLink | None, llm=LLMPredictor | None)
    prediction = await pipeline.predict(target_source, executed=[sources in execution order],
                                        layers={"checks", "dryrun", "llm"} | None, bypass_cache=False)
    pipeline.last_exchange(target_source) -> (prompt, answer) | None   # for crane.showPrompt
"""
