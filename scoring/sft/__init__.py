"""Supervised fine-tuning data: taxonomy-guided judge pairs from ground truth, in the formats that
TRL (`hf`), LLaMA-Factory (`llamafactory`) and OpenAI (`openai`) read, with split hygiene and a card.

pairs (plain data -> instruction/response), hygiene (no train/test overlap), selection (database ->
ground truth), images (original or face-anonymized bytes), writers (one per format), card, export
(the whole export, called by the `export_sft` command and the browser's export job), job (that job).
"""
