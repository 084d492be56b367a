/** Every client-facing message, worded exactly as api-spec.md, decisions.md and docs/api-decisions.md give them. */
export const M = {
  notFound: 'Not found',
  invalidMethod: 'Invalid request method',
  malformedJson: 'Malformed JSON',
  bodyTooLarge: 'Request body too large',
  internal: 'Internal server error',
  rateLimited: 'Rate limit exceeded. Please try again later.',
  missingToken: 'Missing JWT token',
  invalidToken: 'Invalid JWT token',

  nameRequired: 'Name is required',
  nameTooLong: 'Name is too long',
  emailRequired: 'Email is required',
  invalidEmail: 'Invalid email',
  passwordRequired: 'Password is required',
  passwordTooShort: 'Password must be at least 8 characters',
  passwordTooLong: 'Password is too long',
  emailTaken: 'Email already registered',
  registered: 'User registered successfully',
  badCredentials: 'Invalid email or password',
  loggedIn: 'Login successful',

  fileRequired: 'File is required',
  titleRequired: 'Title is required',
  titleTooLong: 'Title is too long',
  descriptionRequired: 'Description is required',
  descriptionTooLong: 'Description is too long',
  tagsRequired: 'Tags are required',
  tagsTooLong: 'Tags are too long',
  invalidLicense: 'Invalid license',
  categoryRequired: 'Category ID or new category name is required',
  categoryNameTooLong: 'Category name is too long',
  categoryNotFound: 'Category not found',
  invalidVideo: 'Invalid video URL',
  fileTooLarge: 'File too large',
  uploaded: 'File uploaded successfully',

  fileIdRequired: 'File ID is required',
  fileNotFound: 'File not found',
  notDownloadable: 'File is either for sale or not enabled',
  downloadReady: 'File ready for download',
  badDownloadLink: 'Invalid or expired download link',
  rangeNotSatisfiable: 'Range not satisfiable',

  notOwner: 'You do not own this file',
  deleted: 'File deleted successfully',
  deletionFailed: 'Error during deletion',

  searchTermRequired: 'Search term is required',
  searchTermTooLong: 'Search term is too long',
  noResults: 'No results found',
  searchFailed: 'Error during search',
  invalidPage: 'Invalid page',
  invalidPerPage: 'Invalid per_page',

  statsFailed: 'Error fetching user stats',
  userNotFound: 'User not found',

  commentRequired: 'Comment is required',
  commentTooLong: 'Comment is too long',
  commentPosted: 'Comment posted successfully',

  nothingToUpdate: 'Nothing to update',
  forSaleNotBoolean: 'for_sale must be a boolean',
  enabledNotBoolean: 'enabled must be a boolean',
  invalidPrice: 'price must be a non-negative number',
  updated: 'File updated successfully',

  notForSale: 'File is not for sale',
  purchased: 'Purchase recorded',
} as const;

export const LIMITS = {
  name: 100,
  email: 254,
  passwordMin: 8,
  password: 1024,
  title: 255,
  description: 5000,
  tags: 1000,
  categoryName: 100,
  categoryDescription: 5000,
  videoUrl: 2048,
  comment: 5000,
  searchTerm: 200,
  perPageDefault: 20,
  perPageMax: 100,
} as const;

export const LICENSES = ['CC BY', 'CC BY-SA', 'CC BY-ND', 'CC BY-NC', 'CC BY-NC-SA', 'CC BY-NC-ND', 'CC0'] as const;
export type License = (typeof LICENSES)[number];
