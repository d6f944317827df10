"""Regenerate ``src/trainsim/catalog/hf_kinds.py``: the transformers model types that are not
decoder-only language models, by what transformers itself classifies them as.

``python benchmarks/hf_model_kinds.py > src/trainsim/catalog/hf_kinds.py`` with the
transformers release named in the output installed (the table was written with 5.24.0).

transformers files each model type's head classes in task mappings
(``src/transformers/models/auto/modeling_auto.py``, ``MODEL_FOR_<TASK>_MAPPING_NAMES``). A type
is a decoder-only language model when it has a causal-LM class and no masked-LM or
sequence-to-sequence one (``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES`` also lists BERT's and BART's
decoder-mode heads, ``BertLMHeadModel``, ``BartForCausalLM``), or when it generates text from
images or other inputs through one (``IMAGE_TEXT_TO_TEXT``, ``MULTIMODAL_LM``: trainsim reads
its language model, ``hf_text_config.text_model``), or models images causally (ImageGPT). Every other
type with a head in the mappings below is refused, with the kind of its first mapping; so are
the sub-configs of a refused composite (``CLIPConfig.sub_configs`` names ``clip_text_model`` and
``clip_vision_model``). A type in no mapping (a new family, remote code) is not listed: trainsim
reads it as a decoder, as before.
"""

from __future__ import annotations

KINDS = {
    "encoder-decoder": ("an encoder-decoder (sequence-to-sequence) model",
                        ("SEQ_TO_SEQ_CAUSAL_LM", "SPEECH_SEQ_2_SEQ")),
    "encoder": ("an encoder (masked language model)", ("MASKED_LM",)),
    "speech": ("a speech or audio encoder", ("CTC", "AUDIO_CLASSIFICATION",
                                             "AUDIO_FRAME_CLASSIFICATION", "AUDIO_XVECTOR",
                                             "RNNT", "TDT")),
    "contrastive": ("a contrastive image-text model or one of its towers",
                    ("ZERO_SHOT_IMAGE_CLASSIFICATION",)),
    "vision": ("a vision model", ("IMAGE_CLASSIFICATION", "BACKBONE", "OBJECT_DETECTION",
                                  "ZERO_SHOT_OBJECT_DETECTION", "SEMANTIC_SEGMENTATION",
                                  "INSTANCE_SEGMENTATION", "UNIVERSAL_SEGMENTATION",
                                  "IMAGE_SEGMENTATION", "MASK_GENERATION", "DEPTH_ESTIMATION",
                                  "MASKED_IMAGE_MODELING", "VIDEO_CLASSIFICATION",
                                  "KEYPOINT_DETECTION", "KEYPOINT_MATCHING", "IMAGE_MATTING",
                                  "IMAGE_TO_IMAGE", "POSE_ESTIMATION", "NORMAL_ESTIMATION",
                                  "POINTMAP_ESTIMATION")),
    "encoder heads": ("an encoder (classification and question-answering heads only)",
                      ("TOKEN_CLASSIFICATION", "QUESTION_ANSWERING", "MULTIPLE_CHOICE",
                       "NEXT_SENTENCE_PREDICTION", "DOCUMENT_QUESTION_ANSWERING",
                       "TABLE_QUESTION_ANSWERING")),
    "time series": ("a time-series model", ("TIME_SERIES_CLASSIFICATION",
                                            "TIME_SERIES_PREDICTION",
                                            "TIME_SERIES_REGRESSION")),
}
"""Kind -> (how the refusal says it, the task mappings that file a type under it)."""


def classify() -> tuple[str, dict[str, str]]:
    """(the transformers version, model_type -> kind) for the types refused."""
    import transformers
    from transformers import CONFIG_MAPPING
    from transformers.models.auto import modeling_auto

    def task(name: str) -> set[str]:
        return set(getattr(modeling_auto, f"MODEL_FOR_{name}_MAPPING_NAMES"))

    decoder = (task("CAUSAL_LM") - task("MASKED_LM") - task("SEQ_TO_SEQ_CAUSAL_LM")
               - task("SPEECH_SEQ_2_SEQ")) | task("IMAGE_TEXT_TO_TEXT") \
        | task("MULTIMODAL_LM") | task("CAUSAL_IMAGE_MODELING")
    kinds: dict[str, str] = {}
    for kind, (_, mappings) in KINDS.items():
        for name in mappings:
            for model_type in sorted(task(name) - decoder):
                kinds.setdefault(model_type, kind)
    grown = True
    while grown:  # the towers of a refused composite (its sub_configs' model types)
        grown = False
        for model_type, kind in list(kinds.items()):
            for sub in (getattr(CONFIG_MAPPING[model_type], "sub_configs", None) or {}).values():
                name = getattr(sub, "model_type", "")
                if name in CONFIG_MAPPING and name not in kinds and name not in decoder:
                    kinds[name] = kind
                    grown = True
    return transformers.__version__, kinds


def main() -> None:
    version, kinds = classify()
    print(f'"""The transformers {version} model types that are not decoder-only language '
          'models, by kind\n(written by ``benchmarks/hf_model_kinds.py`` from transformers\' '
          'task mappings,\n``src/transformers/models/auto/modeling_auto.py`` '
          '``MODEL_FOR_<TASK>_MAPPING_NAMES``; that\nscript says how). '
          '``hf_config.model_from_hf_config`` refuses a config.json of one of them."""\n')
    print("from __future__ import annotations\n")
    print(f'TRANSFORMERS_VERSION = "{version}"\n')
    print("KINDS: dict[str, str] = {")
    for kind, (said, _) in KINDS.items():
        print(f'    "{kind}": "{said}",')
    print("}\n")
    print("NOT_DECODERS: dict[str, str] = {")
    for kind in KINDS:
        types = sorted(t for t, k in kinds.items() if k == kind)
        print(f"    # {kind} ({len(types)})")
        line = "   "
        for t in types:
            item = f' "{t}": "{kind}",'
            if len(line) + len(item) > 99:
                print(line)
                line = "   "
            line += item
        print(line)
    print("}")


if __name__ == "__main__":
    main()
