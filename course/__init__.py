"""Course tooling for the book's exercises: student and instructor editions
(:mod:`course.assignments`) and the autograder (:mod:`course.grade`).

It is not part of :mod:`companion`: the chapters never import it, and its dependencies are
declared on their own in ``course/requirements.txt``. Run it from the repository's root::

    python -m course.assignments book/*.ipynb --out _build/assignments
    python -m course.grade --reference INSTRUCTOR.ipynb -- submissions/*.ipynb
"""
