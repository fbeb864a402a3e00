"""Entry point of the sandboxed code evaluator on Ray Serve.

    serve run remote_reward_server:app --name evaluator
    python remote_reward_server.py            # same, on a local Ray; Ctrl-C stops it

Settings: configs/evaluator.yaml (or the file named by $COBALT_EVALUATOR_CONFIG).
"""

from cobalt.serve.evaluator import build_app

app = build_app()

if __name__ == "__main__":
    from cobalt.serve.evaluator import main

    main()
