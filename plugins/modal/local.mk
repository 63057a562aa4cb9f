# plugins/modal: the modal backend (see man/hs-modal.7).
