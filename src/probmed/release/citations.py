"""Who to cite for each source of a released set, and for the benchmark design itself.

A released set carries images of several datasets, each with its own licence and
citation (../shared/data/SOURCES.md and each folder's SOURCES.md, where they were
checked). The dataset card lists them per source, keyed by the question table's
``source`` value; a source without an entry stops the release rather than ship
uncredited images.
"""

from __future__ import annotations

from dataclasses import dataclass

from probmed.core.errors import ConfigError


@dataclass(frozen=True)
class SourceCitation:
    """How a source is credited: a one-line reference, its licence terms, where it lives, and BibTeX."""

    reference: str
    terms: str
    url: str
    bibtex: str


SOURCE_CITATIONS: dict[str, SourceCitation] = {
    "ChestX-ray14": SourceCitation(
        "Wang X, Peng Y, Lu L, Lu Z, Bagheri M, Summers RM. ChestX-ray8: Hospital-scale Chest X-ray Database and "
        "Benchmarks on Weakly-Supervised Classification and Localization of Common Thorax Diseases. CVPR 2017.",
        "NIH: no restrictions on use; cite the paper",
        "https://nihcc.app.box.com/v/ChestXray-NIHCC",
        "@inproceedings{wang2017chestxray8,\n  title={ChestX-ray8: Hospital-scale Chest X-ray Database and Benchmarks on "
        "Weakly-Supervised Classification and Localization of Common Thorax Diseases},\n  author={Wang, Xiaosong and Peng, "
        "Yifan and Lu, Le and Lu, Zhiyong and Bagheri, Mohammadhadi and Summers, Ronald M.},\n  booktitle={CVPR},\n"
        "  year={2017}\n}",
    ),
    "VQA-RAD": SourceCitation(
        "Lau JJ, Gayen S, Ben Abacha A, Demner-Fushman D. A dataset of clinically generated visual questions and "
        "answers about radiology images. Scientific Data 5:180251 (2018).",
        "CC0 1.0",
        "https://osf.io/89kps/",
        "@article{lau2018vqarad,\n  title={A dataset of clinically generated visual questions and answers about "
        "radiology images},\n  author={Lau, Jason J. and Gayen, Soumya and Ben Abacha, Asma and Demner-Fushman, Dina},\n"
        "  journal={Scientific Data},\n  volume={5},\n  pages={180251},\n  year={2018}\n}",
    ),
    "MedICaT": SourceCitation(
        "Subramanian S, Wang LL, Mehta S, et al. MedICaT: A Dataset of Medical Images, Captions, and Textual "
        "References. Findings of EMNLP 2020.",
        "research and non-commercial use only (per-figure article licences)",
        "https://github.com/allenai/medicat",
        "@inproceedings{subramanian2020medicat,\n  title={MedICaT: A Dataset of Medical Images, Captions, and Textual "
        "References},\n  author={Subramanian, Sanjay and Wang, Lucy Lu and Mehta, Sachin and others},\n"
        "  booktitle={Findings of EMNLP},\n  year={2020}\n}",
    ),
    "ROCO": SourceCitation(
        "Pelka O, Koitka S, Rückert J, Nensa F, Friedrich CM. Radiology Objects in COntext (ROCO): A Multimodal "
        "Image Dataset. MICCAI LABELS 2018, LNCS 11043, pp. 180-189; each figure also credits its PubMed Central article.",
        "per figure, its article's licence (CC BY, CC BY-NC, CC BY-NC-SA, CC0)",
        "https://github.com/razorx89/roco-dataset",
        "@inproceedings{pelka2018roco,\n  title={Radiology Objects in COntext (ROCO): A Multimodal Image Dataset},\n"
        "  author={Pelka, Obioma and Koitka, Sven and R{\\\"u}ckert, Johannes and Nensa, Felix and Friedrich, Christoph M.},\n"
        "  booktitle={MICCAI LABELS},\n  series={LNCS},\n  volume={11043},\n  pages={180--189},\n  year={2018}\n}",
    ),
    "COVID-19 IDC": SourceCitation(
        "Cohen JP, Morrison P, Dao L, Roth K, Duong TQ, Ghassemi M. COVID-19 Image Data Collection: Prospective "
        "Predictions Are the Future. arXiv:2006.11988 (2020).",
        "per image CC BY-NC-SA (4.0); non-commercial, share-alike",
        "https://github.com/ieee8023/covid-chestxray-dataset",
        "@article{cohen2020covid,\n  title={COVID-19 Image Data Collection: Prospective Predictions Are the Future},\n"
        "  author={Cohen, Joseph Paul and Morrison, Paul and Dao, Lan and Roth, Karsten and Duong, Tim Q. and Ghassemi, "
        "Marzyeh},\n  journal={arXiv preprint arXiv:2006.11988},\n  year={2020}\n}",
    ),
    "figshare brain tumor": SourceCitation(
        "Cheng J, Huang W, Cao S, et al. Enhanced Performance of Brain Tumor Classification via Tumor Region "
        "Augmentation and Partition. PLoS ONE 10(10): e0140381 (2015); data: Cheng J, brain tumor dataset, figshare "
        "(2017), doi:10.6084/m9.figshare.1512427.",
        "CC BY 4.0",
        "https://doi.org/10.6084/m9.figshare.1512427",
        "@article{cheng2015braintumor,\n  title={Enhanced Performance of Brain Tumor Classification via Tumor Region "
        "Augmentation and Partition},\n  author={Cheng, Jun and Huang, Wei and Cao, Shuangliang and others},\n"
        "  journal={PLoS ONE},\n  volume={10},\n  number={10},\n  pages={e0140381},\n  year={2015}\n}",
    ),
    "BraTS 2015": SourceCitation(
        "Menze BH, Jakab A, Bauer S, et al. The Multimodal Brain Tumor Image Segmentation Benchmark (BRATS). "
        "IEEE Transactions on Medical Imaging 34(10): 1993-2024 (2015).",
        "CC BY-NC-SA 3.0 CH; non-commercial, share-alike",
        "https://www.virtualskeleton.ch/BRATS/Start2015",
        "@article{menze2015brats,\n  title={The Multimodal Brain Tumor Image Segmentation Benchmark (BRATS)},\n"
        "  author={Menze, Bjoern H. and Jakab, Andras and Bauer, Stefan and others},\n"
        "  journal={IEEE Transactions on Medical Imaging},\n  volume={34},\n  number={10},\n  pages={1993--2024},\n"
        "  year={2015}\n}",
    ),
}

# The benchmark design every release follows (the paper whose protocol probmed implements).
PROBMED_PAPER_BIBTEX = (
    "@article{yan2024worse,\n  title={Worse than Random? An Embarrassingly Simple Probing Evaluation of Large "
    "Multimodal Models in Medical VQA},\n  author={Yan, Qianqi and He, Xuehai and Yue, Xiang and Wang, Xin Eric},\n"
    "  journal={arXiv preprint arXiv:2405.20421},\n  year={2024}\n}"
)


def citation_of(source: str) -> SourceCitation:
    """The citation of one source; ConfigError naming it (and this table) when it has none."""
    try:
        return SOURCE_CITATIONS[source]
    except KeyError:
        raise ConfigError(
            f"release: source {source!r} has no citation; add it to probmed.release.citations.SOURCE_CITATIONS "
            f"(known: {', '.join(SOURCE_CITATIONS)})"
        ) from None
