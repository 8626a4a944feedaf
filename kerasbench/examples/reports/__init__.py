"""Public TF/Keras memory reports as repro files: one a report, its claim in module metadata (kerasbench.public)."""

# The reports, oldest first: each is <name>.py in this folder (kerasbench.public reads them; the atlas's questions
# check a report's name against this list before naming its file).
NAMES = ("keras9151_compile_in_loop", "tf30324_model_in_loop", "tf33009_predict", "tf44176_shuffle",
         "tf57982_tf_function", "tf61791_fit_clear_session", "tf124972_retracing")
